// The CPU fp64 form of every op kind of the registry (src/ops/), filled into its slots: this table's entries for the
// op kinds not yet in a module of their own, and the op modules' (kernels/ops/: RMSNorm, the q/k norm, attention,
// the gate/up projections, SwiGLU) taken in by withOpModules, the rotary's from its module by name (ops/rotary.ts
// ROTARY); registry.test.ts fails on an op kind with neither.
// Each form composes the single-op oracles of this folder; family differences (GPT-NeoX's fused QKV head split, the
// Llama family's GQA and sliding window) come from the config and the step, never from a switch over op kinds. The
// causes of each op kind (the Llama family's why: the ways an op is miswritten) are filled into the registry's
// `variants` slots here too: the op modules' and the rotary's.

import type { NormWeights, Tensor } from '../../numeric/types';
import { familyOf } from '../../ops/families';
import { fillSlots, fillSlotsOf } from '../../ops/slots';
import type { CausesForm, Fp64Form, OpKind } from '../../ops/types';
import { fp64Linear as linear, fp64One as one } from '../ops/forms';
import { withOpModules } from '../ops/index';
import { ROTARY } from '../ops/rotary';
import { embeddingF64 } from './embedding';
import { geluF64 } from './gelu';
import { type LayerNormVariant, layerNormF64 } from './layernorm';
import { linearF64 } from './linear';

/** GPT-NeoX's LayerNorm (its weights have a bias). */
const layernorm: Fp64Form = (a) => {
  const w = a.weights as NormWeights;
  if (a.cfg.family === 'llama' || !('bias' in w))
    throw new Error(`${a.step.slot}: a LayerNorm needs a GPT-NeoX config and norm weights with a bias`);
  const { hiddenSize: d, layerNormEps: eps } = a.cfg;
  return layerNormF64(one(a), a.T, d, w.weight.data, w.bias.data, eps, a.variant as LayerNormVariant);
};

/** Inputs summed left to right, in the step's order (HF's operand order). */
const residual: Fp64Form = (a) => {
  const out = new Float64Array(a.inputs[0]);
  for (const x of a.inputs.slice(1)) {
    if (x.length !== out.length)
      throw new Error(`${a.step.slot}: residual terms of ${out.length} and ${x.length} values`);
    for (let i = 0; i < out.length; i++) out[i] += x[i];
  }
  return out;
};

const TABLE: Readonly<Partial<Record<OpKind, Fp64Form>>> = {
  embedding: (a) => embeddingF64((a.weights as Tensor).data, a.cfg.hiddenSize, [...a.tokens]),
  layernorm,
  qkv: linear,
  q_proj: linear,
  k_proj: linear,
  v_proj: linear,
  rotary: ROTARY.fp64, // its module's (kernels/ops/rotary.ts), by name: no OP_MODULES entry yet
  out_proj: linear,
  residual,
  mlp_up: linear,
  gelu: (a) => geluF64(one(a)),
  mlp_down: linear,
  // A family's final norm is its layer's norm (the kind of its first step, input_layernorm), on the model's weights.
  final_norm: (a) => FP64_FORMS[familyOf(a.cfg).layer[0].op](a),
  lm_head: (a) => {
    const w = a.weights as Tensor;
    return linearF64(one(a), a.T, a.cfg.hiddenSize, w.data, null, a.cfg.vocabSize);
  },
};

export const FP64_FORMS: Readonly<Record<OpKind, Fp64Form>> = withOpModules('fp64', TABLE);

fillSlots('fp64', FP64_FORMS);

/** Each op kind's causes: the op modules' and the rotary's (its module's, by name). */
export const CAUSE_FORMS: Readonly<Partial<Record<OpKind, CausesForm>>> = withOpModules('causes', {
  rotary: ROTARY.causes,
});

fillSlotsOf('variants', CAUSE_FORMS);
