// Launchers for the oracle's three attention kernels in double-float: scores, causal softmax, weighted values —
// for every query row, or for the query rows q0..q0+R−1 of T keys (a run's decode steps over the keys of all
// positions); a row's values are the same bits either way.
import type { KernelDef } from '../../gpu/pipelines';
import type { DispatchSpec } from '../../gpu/program';
import { type DispatchParams, dispatch1d, dispatchOf, type HeadsLauncher, kernelOf } from '../define';
import { type KernelOpts, rowGroups } from '../grid';
import { DF_INCLUDES, DF_MATH_INCLUDES, dfParam } from './df-common';

export const dfScoresKernel = kernelOf('oracle/attn_scores', DF_INCLUDES, {
  q: 'read', // [H, T, hd] df
  k: 'read', // [H, T, hd] df
  s: 'rw', // [H, R, T] df
});

export const dfSoftmaxKernel = kernelOf('oracle/softmax', DF_MATH_INCLUDES, {
  s: 'read', // [H, R, T] df
  p: 'rw', // [H, R, T] df
});

export const dfValuesKernel = kernelOf('oracle/attn_values', DF_INCLUDES, {
  p: 'read', // [H, R, T] df
  v: 'read', // [H, T, hd] df
  ctx: 'rw', // [R, H·hd] df
});

/** The query rows q0..q0+R−1 of T (default: all, q0 = 0 and R = T). */
export interface QueryRows {
  q0: number;
  R: number;
}

const WG = 256;
const SOFTMAX_WG = 64;

function queryRows(label: string, T: number, rows: QueryRows | undefined): QueryRows {
  const q = rows ?? { q0: 0, R: T };
  if (!Number.isInteger(q.q0) || !Number.isInteger(q.R) || q.q0 < 0 || q.R < 1 || q.q0 + q.R > T)
    throw new Error(`${label}: query rows ${q.q0}..${q.q0 + q.R - 1} are not within the ${T} rows`);
  return q;
}

/** The launcher of `kernel`: `threads` outputs and its params from (H, T, hd) and the query rows. */
function dfAttention<B extends DispatchSpec['buffers']>(
  kernel: KernelDef,
  threads: (H: number, T: number, hd: number, R: number) => number,
  params: (H: number, T: number, hd: number, q: QueryRows) => DispatchParams,
): HeadsLauncher<B, [rows?: QueryRows]> {
  return (label, b, H, T, hd, opts = {}, rows) => {
    const q = queryRows(label, T, rows);
    return dispatch1d(label, kernel, WG, threads(H, T, hd, q.R), opts, b, params(H, T, hd, q));
  };
}

/**
 * s[h, r, j] = q[h, i] · k[h, j] / sqrt(hd) for the query rows i = q0 + r and j <= i, 0 above the diagonal —
 * q, k [H, T, hd], s [H, R, T].
 */
export const dfScores = dfAttention<{ q: GPUBuffer; k: GPUBuffer; s: GPUBuffer }>(
  dfScoresKernel,
  (H, T, _hd, R) => H * R * T,
  (H, T, hd, q) => [H, T, hd, q.q0, ...dfParam(1 / Math.sqrt(hd)), q.R, 0],
);

/** ctx[r, h·hd + e] = Σ_{j <= i} p[h, r, j] v[h, j, e], i = q0 + r — p [H, R, T], v [H, T, hd], ctx [R, H·hd]. */
export const dfValues = dfAttention<{ p: GPUBuffer; v: GPUBuffer; ctx: GPUBuffer }>(
  dfValuesKernel,
  (H, _T, hd, R) => R * H * hd,
  (H, T, hd, q) => [H, T, hd, q.q0, q.R, 0, 0, 0],
);

/**
 * Causal softmax of each row r of s [H, R, T] (j <= q0 + r) into p [H, R, T] (0 for j > q0 + r); one workgroup a
 * row.
 */
export function dfSoftmax(
  label: string,
  b: { s: GPUBuffer; p: GPUBuffer },
  H: number,
  T: number,
  opts: KernelOpts = {},
  rows?: QueryRows,
): DispatchSpec {
  const q = queryRows(label, T, rows);
  const n = H * q.R;
  const params = [T, n, q.q0, q.R, ...dfParam(1), { f32: 0 }, { f32: 0 }];
  const constants = { WG: SOFTMAX_WG, ...opts.constants };
  return dispatchOf(label, dfSoftmaxKernel, constants, b, params, rowGroups(n));
}
