// Launchers for the oracle's three attention kernels in double-float: scores, causal softmax, weighted values.
import type { KernelDef } from '../../gpu/pipelines';
import type { DispatchSpec } from '../../gpu/program';
import { type DispatchParams, dispatch1d, dispatchOf, type HeadsLauncher, kernelOf } from '../define';
import { type KernelOpts, rowGroups } from '../grid';
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

/** The launcher of `kernel`: `threads` outputs and its params from (H, T, hd). */
function dfAttention<B extends DispatchSpec['buffers']>(
  kernel: KernelDef,
  threads: (H: number, T: number, hd: number) => number,
  params: (H: number, T: number, hd: number) => DispatchParams,
): HeadsLauncher<B> {
  return (label, b, H, T, hd, opts = {}) =>
    dispatch1d(label, kernel, WG, threads(H, T, hd), opts, b, params(H, T, hd));
}

/** s[h, i, j] = q[h, i] · k[h, j] / sqrt(hd) for j <= i, 0 above the diagonal — q, k [H, T, hd], s [H, T, T]. */
export const dfScores = dfAttention<{ q: GPUBuffer; k: GPUBuffer; s: GPUBuffer }>(
  dfScoresKernel,
  (H, T) => H * T * T,
  (H, T, hd) => [H, T, hd, 0, ...dfParam(1 / Math.sqrt(hd)), { f32: 0 }, { f32: 0 }],
);

/** ctx[i, h·hd + e] = Σ_{j <= i} p[h, i, j] v[h, j, e] — p [H, T, T], v [H, T, hd], ctx [T, H·hd]. */
export const dfValues = dfAttention<{ p: GPUBuffer; v: GPUBuffer; ctx: GPUBuffer }>(
  dfValuesKernel,
  (H, T, hd) => T * H * hd,
  (H, T, hd) => [H, T, hd],
);

/** Causal softmax of each row of s [H, T, T] (j <= i) into p [H, T, T] (0 for j > i); one workgroup a row. */
export function dfSoftmax(
  label: string,
  b: { s: GPUBuffer; p: GPUBuffer },
  H: number,
  T: number,
  opts: KernelOpts = {},
): DispatchSpec {
  const rows = H * T;
  const params = [T, rows, 0, 0, ...dfParam(1), { f32: 0 }, { f32: 0 }];
  const constants = { WG: SOFTMAX_WG, ...opts.constants };
  return dispatchOf(label, dfSoftmaxKernel, constants, b, params, rowGroups(rows));
}
