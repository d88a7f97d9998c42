// The gate and up projections of the Llama MLP (`gate_up`: mlp.gate_proj and mlp.up_proj, each x · W^T (+ b) into
// the intermediate size): every form the registry holds of them, from this one file. A linear like the others (the
// shared forms of ops/forms.ts and oracle/df-form.ts); its fused kernel, both projections in one GEMM over the
// concatenated [gate; up] weight with the SwiGLU epilogue (switch `linear_gelu`, shaders/fused/linear_swiglu.wgsl),
// is launched from the SwiGLU's module (swiglu.ts).

import { dfLinearForm } from '../oracle/df-form';
import { fp64Linear, type OpModule, wgslLinearForm } from './forms';
import { SWIGLU_FUSED } from './swiglu';

export const GATE_UP: OpModule = {
  kind: 'gate_up',
  fp64: fp64Linear,
  wgsl: wgslLinearForm(
    (c) => c.hiddenSize,
    (c) => c.intermediateSize,
  ),
  df: dfLinearForm('hidden'),
  fused: SWIGLU_FUSED,
};
