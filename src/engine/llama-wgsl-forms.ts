import { embedding } from '../kernels/embedding';
import {
  wgslLinearForm as linearForm,
  wgslNeed as need,
  wgslOpts as opts,
  type WgslForm,
} from '../kernels/ops/forms';
import { withOpModules } from '../kernels/ops/index';
import { ROTARY } from '../kernels/ops/rotary';
import { residualAdd } from '../kernels/residual';
import type { LlamaConfig } from '../numeric/types';
import { LLAMA_FAMILY } from '../ops/families';
import type { OpKind } from '../ops/types';
import { slotWidth } from '../ops/widths';

export type { LayerCache, WgslArgs, WgslForm } from '../kernels/ops/forms';

const d = (c: LlamaConfig) => c.hiddenSize;
const qWidth = (c: LlamaConfig) => slotWidth(c, 'q');
const kvWidth = (c: LlamaConfig) => slotWidth(c, 'kv');

/** The op kinds not yet in a module of their own, each as its reference kernels (GPT-NeoX's plan is plan.ts). */
const TABLE: Readonly<Partial<Record<OpKind, WgslForm>>> = {
  embedding: (a) => [
    embedding(
      a.label,
      { ids: a.ids, table: need(a.weight, a), out: a.out },
      a.T,
      a.cfg.hiddenSize,
      { row0: 0, rows: a.cfg.vocabSize },
      opts(a),
    ),
  ],
  q_proj: linearForm(d, qWidth),
  k_proj: linearForm(d, kvWidth),
  v_proj: linearForm(d, kvWidth),
  // The final norm is the layer's norm (the kind of the family's first step, input_layernorm), on model.norm.
  final_norm: (a) => {
    const form = WGSL_FORMS[LLAMA_FAMILY.layer[0].op];
    if (!form) throw new Error(`${a.label}: the family's layer norm has no WGSL form`);
    return form(a);
  },
  rotary: ROTARY.wgsl, // its module's (kernels/ops/rotary.ts), by name: no OP_MODULES entry yet
  out_proj: linearForm(qWidth, d),
  // HF `residual + hidden_states`: the kernel's b + a is the same f32 sum (an add commutes bit for bit).
  residual: (a) => {
    if (a.inputs.length !== 2) throw new Error(`${a.label}: the Llama residual adds two terms`);
    const [x, y] = a.inputs;
    return [residualAdd(a.label, { a: x, b: y, c: null, out: a.out }, a.T * a.cfg.hiddenSize, opts(a))];
  },
  mlp_down: linearForm((c) => c.intermediateSize, d),
  lm_head: linearForm(d, (c) => c.vocabSize),
};

/**
 * The Llama family's op kinds, each as its reference kernels: this table's and the op modules' (kernels/ops/, one
 * file an op kind).
 */
export const WGSL_FORMS: Readonly<Partial<Record<OpKind, WgslForm>>> = withOpModules('wgsl', TABLE);
