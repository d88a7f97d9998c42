// The RMSNorm op (`rmsnorm`: HF LlamaRMSNorm, y = x / sqrt(mean(x²) + eps) · w over the hidden size — the Llama
// family's input_layernorm and post_attention_layernorm; its final norm is the same form, ops/families.ts): every
// form the registry holds of it, from this one file. The WGSL reference launcher (shaders/reference/rmsnorm.wgsl)
// and the double-float one (shaders/oracle/rmsnorm.wgsl) are here; the fp64 single-op oracle with the causes'
// variants is kernels/cpu/rmsnorm.ts; its fused kernel, the residual add + RMSNorm (switch `layernorm`,
// shaders/fused/add_rmsnorm.wgsl and add_rmsnorm_fold.wgsl), is launched by kernels/fused-llama.ts and
// fused-llama-fold.ts. Qwen3's per-head q/k norm (qk-norm.ts) runs these launchers over T · heads rows.

import type { DispatchSpec } from '../../gpu/program';
import type { Tensor } from '../../numeric/types';
import type { Fp64Form } from '../../ops/types';
import { type RmsNormVariant, rmsNormF64 } from '../cpu/rmsnorm';
import { dispatchOf, kernelOf } from '../define';
import { addRmsNorm } from '../fused-llama';
import { addRmsNormFold } from '../fused-llama-fold';
import { type KernelOpts, rowGroups } from '../grid';
import { DF_INCLUDES, dfParam } from '../oracle/df-common';
import { type DfForm, dfNeed, dfRows } from '../oracle/df-form';
import { fp64Llama, fp64One, type OpModule, type WgslForm, wgslNeed, wgslOpts } from './forms';

export const rmsNormKernel = kernelOf('reference/rmsnorm', ['common/precision.wgsl'], {
  x: 'read', // [rows, d]
  weight: 'read', // [d]
  y: 'rw', // [rows, d]
});

const WG = 128;

/**
 * y = x / sqrt(mean(x²) + eps) · weight over d (HF LlamaRMSNorm) — x, y: [rows, d]; weight: [d]. One workgroup per
 * row. Qwen3's per-head q/k norm is the same launch with rows = T · heads, d = head_dim.
 */
export function rmsNorm(
  label: string,
  b: { x: GPUBuffer; weight: GPUBuffer; y: GPUBuffer },
  rows: number,
  d: number,
  eps: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return dispatchOf(
    label,
    rmsNormKernel,
    { WG, ...opts.constants },
    b,
    [rows, d, { f32: eps }],
    rowGroups(rows),
  );
}

export const dfRmsNormKernel = kernelOf('oracle/rmsnorm', DF_INCLUDES, {
  x: 'read', // [rows, d] df
  weight: 'read', // [d] f32
  y: 'rw', // [rows, d] df
});

const DF_ROW_WG = 64;

/** y = x / sqrt(mean(x²) + eps) · weight over each row of d, in df — x, y: [rows, d]; one workgroup a row. */
export function dfRmsNorm(
  label: string,
  b: { x: GPUBuffer; weight: GPUBuffer; y: GPUBuffer },
  rows: number,
  d: number,
  eps: number,
  opts: KernelOpts = {},
): DispatchSpec {
  if (!Number.isInteger(rows) || rows < 1 || !Number.isInteger(d) || d < 1)
    throw new Error(`${label}: RMSNorm over [${rows}, ${d}] needs positive integer sizes`);
  const params = [rows, d, 0, 0, ...dfParam(eps), ...dfParam(1)];
  return dispatchOf(label, dfRmsNormKernel, { WG: DF_ROW_WG, ...opts.constants }, b, params, rowGroups(rows));
}

/** fp64: HF's cast order is the identity in fp64; a cause's variant (RmsNormVariant) as the oracle takes it. */
const fp64: Fp64Form = (a) =>
  rmsNormF64(
    fp64One(a),
    a.T,
    a.cfg.hiddenSize,
    (a.weights as Tensor).data,
    fp64Llama(a).rmsNormEps,
    a.variant as RmsNormVariant,
  );

const wgsl: WgslForm = (a) => [
  rmsNorm(
    a.label,
    { x: a.inputs[0], weight: wgslNeed(a.weight, a), y: a.out },
    a.T,
    a.cfg.hiddenSize,
    a.cfg.rmsNormEps,
    wgslOpts(a),
  ),
];

const df: DfForm = (a) => {
  if (a.cfg.family !== 'llama') throw new Error(`${a.label}: an RMSNorm in a GPT-NeoX model`);
  const b = { x: a.inputs[0], weight: dfNeed(a.weight, a), y: a.out };
  return [dfRmsNorm(a.label, b, dfRows(a), a.cfg.hiddenSize, a.cfg.rmsNormEps, { constants: a.df })];
};

export const RMSNORM: OpModule = {
  kind: 'rmsnorm',
  fp64,
  wgsl,
  df,
  fused: { layernorm: { addRmsNorm, addRmsNormFold } },
};
