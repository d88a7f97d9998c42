// Launchers for the Llama family's double-float oracle kernels (shaders/oracle/): the rotary over heads
// (rotate-half; the head split alone for v) and the attention core with grouped-query heads and a sliding window.
// The linears, the embedding and the residual adds are GPT-NeoX's (linear.ts, embedding.ts, residual.ts); RMSNorm's
// and SwiGLU's are in their op modules (kernels/ops/rmsnorm.ts, swiglu.ts). The fp64 forms they match:
// src/kernels/cpu/rotary.ts ropeHeadsF64, attention.ts.
import type { DispatchSpec } from '../../gpu/program';
import { angleTableOf, type RotaryAngles } from '../cpu/rotary-angles';
import { dispatch1d, dispatchOf, kernelOf } from '../define';
import { type KernelOpts, rowGroups } from '../grid';
import { DF_INCLUDES, DF_MATH_INCLUDES, dfParam } from './df-common';

export const dfRopeHeadsKernel = kernelOf('oracle/rope_heads', DF_INCLUDES, {
  x: 'read', // [T, heads, hd] df
  cos: 'read', // [T, r/2] df
  sin: 'read', // [T, r/2] df
  out: 'rw', // [heads, T, hd] df
});

export const dfRotaryPackedKernel = kernelOf('oracle/rotary_packed', DF_INCLUDES, {
  qkv: 'read', // [T, H, 3, hd] df
  cos: 'read', // [T, r/2] df
  sin: 'read', // [T, r/2] df
  out: 'rw', // [3, H, T, hd] df
});

export const dfGqaScoresKernel = kernelOf('oracle/gqa_scores', DF_INCLUDES, {
  q: 'read', // [H, T, hd] df
  k: 'read', // [KV, T, hd] df
  s: 'rw', // [H, T, T] df
});

export const dfGqaSoftmaxKernel = kernelOf('oracle/gqa_softmax', DF_MATH_INCLUDES, {
  s: 'read', // [H, T, T] df
  p: 'rw', // [H, T, T] df
});

export const dfGqaValuesKernel = kernelOf('oracle/gqa_values', DF_INCLUDES, {
  p: 'read', // [H, T, T] df
  v: 'read', // [KV, T, hd] df
  ctx: 'rw', // [T, H·hd] df
});

const WG = 256;
const ROW_WG = 64;

/**
 * cos/sin tables [T, half] of the angles t · invFreq[i] in fp64, exactly as the CPU oracle's ropeHeadsF64 computes
 * them (angleTableOf, then Math.cos / Math.sin), as plain doubles: split into df pairs for upload (toDfPairs). At
 * least one element long so they can back a buffer when there is no rotation.
 */
export function ropeTablesF64(
  T: number,
  invFreq: ArrayLike<number>,
  angles: RotaryAngles = 'exact',
): { cos: Float64Array; sin: Float64Array } {
  const half = invFreq.length;
  const theta = angleTableOf(T, invFreq, angles); // [T, half]
  const cos = new Float64Array(Math.max(1, T * half));
  const sin = new Float64Array(Math.max(1, T * half));
  for (let i = 0; i < T * half; i++) {
    cos[i] = Math.cos(theta[i]);
    sin[i] = Math.sin(theta[i]);
  }
  return { cos, sin };
}

/**
 * x [T, heads, hd] -> out [heads, T, hd] in df, each head's first r dims rotated (rotate-half) with the tables'
 * cos/sin [T, r/2]; r = 0 is the head split alone.
 */
export function dfRopeHeads(
  label: string,
  b: { x: GPUBuffer; cos: GPUBuffer; sin: GPUBuffer; out: GPUBuffer },
  T: number,
  heads: number,
  hd: number,
  r: number,
  opts: KernelOpts = {},
): DispatchSpec {
  if (r < 0 || r > hd || r % 2 !== 0)
    throw new Error(`${label}: rotary dims ${r} must be even and within [0, ${hd}]`);
  return dispatch1d(label, dfRopeHeadsKernel, WG, heads * T * hd, opts, b, [T, heads, hd, r]);
}

/**
 * GPT-NeoX's fused QKV [T, H, 3, hd] -> q, k, v packed in one buffer ([3, H, T, hd]: the registry's `qkv_rot` slot),
 * q and k rotated (rotate-half) on their first r dims, in df.
 */
export function dfRotaryPacked(
  label: string,
  b: { qkv: GPUBuffer; cos: GPUBuffer; sin: GPUBuffer; out: GPUBuffer },
  T: number,
  H: number,
  hd: number,
  r: number,
  opts: KernelOpts = {},
): DispatchSpec {
  if (r < 0 || r > hd || r % 2 !== 0)
    throw new Error(`${label}: rotary dims ${r} must be even and within [0, ${hd}]`);
  return dispatch1d(label, dfRotaryPackedKernel, WG, H * T * hd, opts, b, [T, H, hd, r]);
}

/**
 * The attention core's shape: H query heads over KV key/value heads (GPT-NeoX: KV = H), T keys, the sliding window
 * (null: none), and the first query row q0 (default 0: the query rows are q0..T−1).
 */
export interface GqaShape {
  H: number;
  KV: number;
  T: number;
  hd: number;
  window: number | null;
  q0?: number;
  /** Where q, k and v start in their buffers, in elements (default 0; GPT-NeoX's packed q, k, v: 0, n, 2n). */
  offsets?: { q: number; k: number; v: number };
}

function checkShape(label: string, s: GqaShape): { group: number; window: number; q0: number } {
  if (!(s.KV >= 1) || s.H % s.KV !== 0)
    throw new Error(`${label}: ${s.H} query heads cannot be grouped over ${s.KV} KV heads`);
  if (s.window !== null && !(Number.isInteger(s.window) && s.window >= 1))
    throw new Error(`${label}: sliding window ${s.window} must be a positive integer`);
  const q0 = s.q0 ?? 0;
  if (!Number.isInteger(q0) || q0 < 0 || q0 >= s.T)
    throw new Error(`${label}: query rows from ${q0} are not within the ${s.T} rows`);
  return { group: s.H / s.KV, window: s.window ?? 0, q0 };
}

/**
 * The attention core in df, three dispatches, for the query rows q0..T−1 (R = T − q0) over the keys of all T
 * positions: scores [H, R, T] (0 where a row does not see a key), their softmax over the keys each row sees, the
 * weighted values ctx [R, H·hd] — q [H, T, hd], k and v [KV, T, hd]. A row's values are the same bits whatever q0.
 */
export function dfGqaAttention(
  label: string,
  b: { q: GPUBuffer; k: GPUBuffer; v: GPUBuffer; scores: GPUBuffer; probs: GPUBuffer; ctx: GPUBuffer },
  s: GqaShape,
  opts: KernelOpts = {},
): DispatchSpec[] {
  const { group, window, q0 } = checkShape(label, s);
  const { H, T, hd } = s;
  const R = T - q0;
  const off = s.offsets ?? { q: 0, k: 0, v: 0 };
  const c = { WG, ...opts.constants };
  return [
    dispatch1d(`${label}/scores`, dfGqaScoresKernel, WG, H * R * T, opts, { q: b.q, k: b.k, s: b.scores }, [
      H,
      T,
      hd,
      group,
      window,
      off.q,
      off.k,
      q0,
      ...dfParam(1 / Math.sqrt(hd)),
      R,
      0,
    ]),
    dispatchOf(
      `${label}/probs`,
      dfGqaSoftmaxKernel,
      { ...c, WG: ROW_WG },
      { s: b.scores, p: b.probs },
      [T, H * R, window, q0, ...dfParam(1), R, 0],
      rowGroups(H * R),
    ),
    dispatch1d(label, dfGqaValuesKernel, WG, R * H * hd, opts, { p: b.probs, v: b.v, ctx: b.ctx }, [
      H,
      T,
      hd,
      group,
      window,
      off.v,
      q0,
      R,
    ]),
  ];
}
