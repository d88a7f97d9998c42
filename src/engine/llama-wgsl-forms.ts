// The reference WGSL form of each op kind of the Llama family: the launches that compute one step of the registry
// (ops/families.ts) from its input buffers into its output buffer, with its weights; used by the reference forward
// (llama-reference.ts), which iterates the steps. With a KV cache (decoding) the rotary writes keys into it and the
// attention writes values into it and reads both. What a form is given (WgslArgs) is kernels/ops/forms.ts'; the op
// kinds with a module of their own (kernels/ops/) bring their forms from there.

import type { OverrideConstants } from '../gpu/pipelines';
import { attnScores, attnShapeConstants, attnValues, softmaxCausal } from '../kernels/attention';
import { embedding } from '../kernels/embedding';
import {
  wgslLinearForm as linearForm,
  wgslNeed as need,
  wgslOpts as opts,
  type WgslForm,
} from '../kernels/ops/forms';
import { withOpModules } from '../kernels/ops/index';
import { residualAdd } from '../kernels/residual';
import { ropeHeads } from '../kernels/rope';
import type { LlamaConfig } from '../numeric/types';
import { LLAMA_FAMILY } from '../ops/families';
import type { OpKind, SlotWidth } from '../ops/types';

export type { LayerCache, WgslArgs, WgslForm } from '../kernels/ops/forms';

const d = (c: LlamaConfig) => c.hiddenSize;
const qWidth = (c: LlamaConfig) => c.numHeads * c.headDim;
const kvWidth = (c: LlamaConfig) => c.numKvHeads * c.headDim;

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
  // q at its rows [H, T, hd]; k [KV, T, hd], or into the cache at its positions (a.out is then the cache's k).
  rotary: (a) => {
    const query = a.step.width === 'q_heads';
    const heads = query ? a.cfg.numHeads : a.cfg.numKvHeads;
    const b = { x: a.inputs[0], ...a.rope, out: a.out };
    const { headDim: hd, rotaryDim: r } = a.cfg;
    return [ropeHeads(a.label, b, a.T, heads, hd, r, opts(a), undefined, a.kv?.at, query)];
  },
  // inputs: q [H, T, hd] and k [KV, T, hd] rotated (or the cache's k), v [T, KV·hd] as projected (split here,
  // unrotated, into the cache's v when there is one).
  attention: (a) => {
    const { numHeads: H, numKvHeads: KV, headDim: hd } = a.cfg;
    const T = a.T;
    const at = a.kv?.at;
    const Tk = (at?.p0 ?? 0) + T; // keys the rows see
    const shape = attnShapeConstants(a.label, {
      H,
      kvHeads: KV,
      window: a.cfg.slidingWindow[a.layer] ?? null,
    });
    const plain: OverrideConstants = a.cpu ? { PLAIN: true } : {};
    const v = a.kv?.v ?? a.scratch('v_heads', KV * T * hd);
    const s = a.scratch('scores', H * T * Tk);
    const p = a.scratch('probs', H * T * Tk);
    const [q, k, vRows] = a.inputs;
    return [
      ropeHeads(`${a.label}/v`, { x: vRows, ...a.rope, out: v }, T, KV, hd, 0, opts(a), undefined, at),
      attnScores(`${a.label}/scores`, { q, k, s }, H, T, hd, opts(a, { ...shape.scores, ...plain }), at),
      softmaxCausal(`${a.label}/probs`, { s, p }, H, T, opts(a, { ...shape.softmax, ...plain }), at),
      attnValues(a.label, { p, v, ctx: a.out }, H, T, hd, opts(a, { ...shape.values, ...plain }), at),
    ];
  },
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

/** Floats of a slot of `width` at T rows. */
export function slotFloats(cfg: LlamaConfig, width: SlotWidth, T: number): number {
  const per: Partial<Record<SlotWidth, number>> = {
    hidden: cfg.hiddenSize,
    q: qWidth(cfg),
    kv: kvWidth(cfg),
    q_heads: qWidth(cfg),
    kv_heads: kvWidth(cfg),
    ff: cfg.intermediateSize,
    vocab: cfg.vocabSize,
  };
  const n = per[width];
  if (n === undefined) throw new Error(`Llama reference: no slot width '${width}' in the Llama family`);
  return T * n;
}
