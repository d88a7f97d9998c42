// The RMSNorm op (`rmsnorm`: HF LlamaRMSNorm, y = x / sqrt(mean(x²) + eps) · w over the hidden size — the Llama
// family's input_layernorm and post_attention_layernorm; its final norm is the same form, ops/families.ts): every
// form the registry holds of it, from this one file: its fp64 single-op oracle (rmsNormF64, with the ways an RMSNorm
// is miswritten as a variant: the causes), the WGSL reference launcher (shaders/reference/rmsnorm.wgsl) and the
// double-float one (shaders/oracle/rmsnorm.wgsl). HF computes the variance in fp32 of the input cast to fp32,
// normalises, casts back to the input dtype and then multiplies by the weight; in fp64 every cast is the identity, so
// the order drops out of the oracle. Its fused kernel, the residual add + RMSNorm (switch `layernorm`,
// shaders/fused/add_rmsnorm.wgsl), is launched here too, with its form that also adds up the split-K partials of the
// projection before it (add_rmsnorm_fold.wgsl: the o and the down projections' reduction folded into the norm after
// them, the same bits as the reduction then add_rmsnorm, one dispatch fewer). Qwen3's per-head q/k norm (qk-norm.ts)
// runs the reference launchers over T · heads rows.

import type { DispatchSpec } from '../../gpu/program';
import type { Tensor } from '../../numeric/types';
import type { Fp64Form } from '../../ops/types';
import { dispatchOf, kernelOf } from '../define';
import { partialsRange, type SplitPartials } from '../fused-linear-fold';
import { type NormLauncher, normDispatchOf } from '../fused-norm';
import { type KernelOpts, rowGroups } from '../grid';
import { DF_INCLUDES, dfParam } from '../oracle/df-common';
import { type DfForm, dfNeed, dfRows } from '../oracle/df-form';
import { fp64Llama, fp64One, type OpModule, type WgslForm, wgslNeed, wgslOpts } from './forms';

export interface RmsNormVariant {
  /** x / (sqrt(mean(x²)) + eps) instead of / sqrt(mean(x²) + eps). */
  epsOutside?: boolean;
  /** Subtract the row mean first (a LayerNorm without bias): (x - mean) / sqrt(var + eps) · w. */
  centered?: boolean;
  /** Leave out the weight. */
  noWeight?: boolean;
}

/** x [rows, d] -> [rows, d]: x / sqrt(mean(x²) + eps) · weight. */
export function rmsNormF64(
  x: ArrayLike<number>,
  rows: number,
  d: number,
  weight: ArrayLike<number>,
  eps: number,
  v: RmsNormVariant = {},
): Float64Array {
  if (x.length < rows * d)
    throw new Error(`rmsNormF64: x has ${x.length} values, [${rows}, ${d}] needs ${rows * d}`);
  if (!v.noWeight && weight.length < d)
    throw new Error(`rmsNormF64: weight has ${weight.length} values, needs ${d}`);
  const out = new Float64Array(rows * d); // [rows, d]
  for (let r = 0; r < rows; r++) {
    const off = r * d;
    let mean = 0;
    if (v.centered) {
      for (let e = 0; e < d; e++) mean += x[off + e];
      mean /= d;
    }
    let sq = 0;
    for (let e = 0; e < d; e++) {
      const c = x[off + e] - mean;
      sq += c * c;
    }
    const ms = sq / d;
    const inv = v.epsOutside ? 1 / (Math.sqrt(ms) + eps) : 1 / Math.sqrt(ms + eps);
    for (let e = 0; e < d; e++) out[off + e] = (x[off + e] - mean) * inv * (v.noWeight ? 1 : weight[e]);
  }
  return out;
}

export const rmsNormKernel = kernelOf('reference/rmsnorm', ['common/precision.wgsl'], {
  x: 'read', // [rows, d]
  weight: 'read', // [d]
  y: 'rw', // [rows, d]
});

const WG = 128;

/** An RMSNorm launcher, the reference's or the double-float one: x, y [rows, d], weight [d], eps. */
type RmsNormLauncher = (
  label: string,
  b: { x: GPUBuffer; weight: GPUBuffer; y: GPUBuffer },
  rows: number,
  d: number,
  eps: number,
  opts?: KernelOpts,
) => DispatchSpec;

/**
 * y = x / sqrt(mean(x²) + eps) · weight over d (HF LlamaRMSNorm) — x, y: [rows, d]; weight: [d]. One workgroup per
 * row. Qwen3's per-head q/k norm is the same launch with rows = T · heads, d = head_dim.
 */
export const rmsNorm: RmsNormLauncher = (label, b, rows, d, eps, opts = {}) =>
  dispatchOf(label, rmsNormKernel, { WG, ...opts.constants }, b, [rows, d, { f32: eps }], rowGroups(rows));

export const dfRmsNormKernel = kernelOf('oracle/rmsnorm', DF_INCLUDES, {
  x: 'read', // [rows, d] df
  weight: 'read', // [d] f32
  y: 'rw', // [rows, d] df
});

const DF_ROW_WG = 64;

/** y = x / sqrt(mean(x²) + eps) · weight over each row of d, in df — x, y: [rows, d]; one workgroup a row. */
export const dfRmsNorm: RmsNormLauncher = (label, b, rows, d, eps, opts = {}) => {
  if (!Number.isInteger(rows) || rows < 1 || !Number.isInteger(d) || d < 1)
    throw new Error(`${label}: RMSNorm over [${rows}, ${d}] needs positive integer sizes`);
  const params = [rows, d, 0, 0, ...dfParam(eps), ...dfParam(1)];
  return dispatchOf(label, dfRmsNormKernel, { WG: DF_ROW_WG, ...opts.constants }, b, params, rowGroups(rows));
};

export const addRmsNormKernel = kernelOf(
  'fused/add_rmsnorm',
  ['common/precision.wgsl', 'common/row_stats.wgsl', 'common/rms_row.wgsl'],
  {
    a: 'read', // [rows, d]
    b: 'read', // [rows, d]
    w: 'read', // [d]
    r: 'rw', // [rows, d]
    y: 'rw', // [rows, d]
  },
);

/**
 * A fused RMSNorm dispatch (add_rmsnorm.wgsl, add_rmsnorm_fold.wgsl): one workgroup per row of d (rowGroups: rows past
 * 65535 on a 2-D grid), params [rows, d, eps, ...more]; d past what the device's workgroup memory holds is refused
 * before anything is recorded.
 */
export const rmsNormDispatch = normDispatchOf(
  (label, d, max) => `${label}: fused RMSNorm supports d <= ${max} with this workgroup memory, got ${d}`,
  rowGroups,
);

/**
 * r = a + b; y = RMSNorm(r; w, eps) — a, b, r, y: [rows, d]; w: [d]. With `b: null` RMSNorm of a alone (the first
 * layer's input norm): b and r are not touched (`dummy` is bound for r). Faults: FAULT_EPS_OUTSIDE, and row_stats'
 * FAULT_EPS_SCALE and FAULT_REORDER.
 */
export const addRmsNorm: NormLauncher<{
  a: GPUBuffer;
  b: GPUBuffer | null;
  w: GPUBuffer;
  r: GPUBuffer | null;
  y: GPUBuffer;
  dummy: GPUBuffer;
}> = (label, buf, rows, d, eps, opts = {}) => {
  const add = buf.b !== null;
  if (add !== (buf.r !== null)) throw new Error(`${label}: the residual add needs both b and r (or neither)`);
  const buffers = { a: buf.a, b: buf.b ?? buf.a, w: buf.w, r: buf.r ?? buf.dummy, y: buf.y };
  return rmsNormDispatch(label, addRmsNormKernel, [rows, d, eps], opts, { ADD: add }, buffers);
};

export const addRmsNormFoldKernel = kernelOf(
  'fused/add_rmsnorm_fold',
  ['common/precision.wgsl', 'common/row_stats.wgsl', 'common/rms_row.wgsl'],
  {
    a: 'read', // [rows, d] residual stream
    b_bias: 'read', // [d] the projection's bias (or a dummy)
    b_part: 'read', // [S, rows, d] the projection's partials
    w: 'read', // [d]
    b: 'rw', // [rows, d] the projection's output
    r: 'rw', // [rows, d]
    y: 'rw', // [rows, d]
  },
);

/**
 * b = the split projection's output formed from its partials (as its reduction would), r = a + b, y = RMSNorm(r; w,
 * eps): a, b, r, y [rows, d], w [d]. Faults as addRmsNorm's: FAULT_EPS_OUTSIDE, row_stats' FAULT_EPS_SCALE and
 * FAULT_REORDER.
 */
export const addRmsNormFold: NormLauncher<{
  a: GPUBuffer;
  part: SplitPartials;
  w: GPUBuffer;
  b: GPUBuffer;
  r: GPUBuffer;
  y: GPUBuffer;
  dummy: GPUBuffer;
}> = (label, buf, rows, d, eps, opts = {}) => {
  const { part } = buf;
  const buffers = {
    a: buf.a,
    b_bias: part.bias ?? buf.dummy,
    b_part: partialsRange(part, rows, d),
    w: buf.w,
    b: buf.b,
    r: buf.r,
    y: buf.y,
  };
  const more = [part.K, part.kChunk, part.bias ? 1 : 0];
  return rmsNormDispatch(label, addRmsNormFoldKernel, [rows, d, eps], opts, {}, buffers, more);
};

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

/** Its fused kernel's launchers under the switch id (the Llama fused forward reaches them so: ops/index.ts). */
export const RMSNORM_FUSED = { layernorm: { add: addRmsNorm, addFold: addRmsNormFold } } as const;

export const RMSNORM: OpModule = { kind: 'rmsnorm', fp64, wgsl, df, fused: RMSNORM_FUSED };
