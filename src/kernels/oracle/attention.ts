// Launchers for the oracle's three attention kernels in double-float: scores, causal softmax, weighted values.
import type { DispatchSpec } from '../../gpu/program';
import { dispatch1d, dispatchOf, kernelOf } from '../define';
import { type KernelOpts, MAX_GROUPS } from '../grid';
import { DF_INCLUDES, DF_MATH_INCLUDES, dfParam } from './df-common';

export const dfScoresKernel = kernelOf('oracle/attn_scores', DF_INCLUDES, {
  q: 'read', // [H, T, hd] df
  k: 'read', // [H, T, hd] df
  s: 'rw', // [H, T, T] df
});

export const dfSoftmaxKernel = kernelOf('oracle/softmax', DF_MATH_INCLUDES, {
  s: 'read', // [H, T, T] df
  p: 'rw', // [H, T, T] df
});

export const dfValuesKernel = kernelOf('oracle/attn_values', DF_INCLUDES, {
  p: 'read', // [H, T, T] df
  v: 'read', // [H, T, hd] df
  ctx: 'rw', // [T, H·hd] df
});

const WG = 256;
const SOFTMAX_WG = 64;

/** s[h, i, j] = q[h, i] · k[h, j] / sqrt(hd) for j <= i, 0 above the diagonal — q, k [H, T, hd], s [H, T, T]. */
export function dfScores(
  label: string,
  b: { q: GPUBuffer; k: GPUBuffer; s: GPUBuffer },
  H: number,
  T: number,
  hd: number,
  opts: KernelOpts = {},
): DispatchSpec {
  const params = [H, T, hd, 0, ...dfParam(1 / Math.sqrt(hd)), { f32: 0 }, { f32: 0 }];
  return dispatch1d(label, dfScoresKernel, WG, H * T * T, opts, b, params);
}

/** Causal softmax of each row of s [H, T, T] (j <= i) into p [H, T, T] (0 for j > i); one workgroup a row. */
export function dfSoftmax(
  label: string,
  b: { s: GPUBuffer; p: GPUBuffer },
  H: number,
  T: number,
  opts: KernelOpts = {},
): DispatchSpec {
  const rows = H * T;
  return dispatchOf(
    label,
    dfSoftmaxKernel,
    { WG: SOFTMAX_WG, ...opts.constants },
    b,
    [T, rows, 0, 0, ...dfParam(1), { f32: 0 }, { f32: 0 }],
    rows <= MAX_GROUPS ? [rows, 1, 1] : [MAX_GROUPS, Math.ceil(rows / MAX_GROUPS), 1],
  );
}

/** ctx[i, h·hd + e] = Σ_{j <= i} p[h, i, j] v[h, j, e] — p [H, T, T], v [H, T, hd], ctx [T, H·hd]. */
export function dfValues(
  label: string,
  b: { p: GPUBuffer; v: GPUBuffer; ctx: GPUBuffer },
  H: number,
  T: number,
  hd: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return dispatch1d(label, dfValuesKernel, WG, T * H * hd, opts, b, [H, T, hd]);
}
