// Launchers for the oracle's three attention kernels in double-float: scores, causal softmax, weighted values.
import type { KernelDef } from '../../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../../gpu/program';
import { grid1d, type KernelOpts, MAX_GROUPS } from '../grid';
import { DF_INCLUDES, DF_MATH_INCLUDES, dfParam } from './df-common';

export const dfScoresKernel: KernelDef = {
  name: 'oracle/attn_scores',
  file: 'oracle/attn_scores.wgsl',
  includes: DF_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'q', kind: 'read' }, // [H, T, hd] df
    { name: 'k', kind: 'read' }, // [H, T, hd] df
    { name: 's', kind: 'rw' }, // [H, T, T] df
  ],
};

export const dfSoftmaxKernel: KernelDef = {
  name: 'oracle/softmax',
  file: 'oracle/softmax.wgsl',
  includes: DF_MATH_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 's', kind: 'read' }, // [H, T, T] df
    { name: 'p', kind: 'rw' }, // [H, T, T] df
  ],
};

export const dfValuesKernel: KernelDef = {
  name: 'oracle/attn_values',
  file: 'oracle/attn_values.wgsl',
  includes: DF_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'p', kind: 'read' }, // [H, T, T] df
    { name: 'v', kind: 'read' }, // [H, T, hd] df
    { name: 'ctx', kind: 'rw' }, // [T, H·hd] df
  ],
};

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
  return {
    label,
    kernel: dfScoresKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([H, T, hd, 0, ...dfParam(1 / Math.sqrt(hd)), { f32: 0 }, { f32: 0 }]),
    workgroups: grid1d(H * T * T, WG),
  };
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
  return {
    label,
    kernel: dfSoftmaxKernel,
    constants: { WG: SOFTMAX_WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([T, rows, 0, 0, ...dfParam(1), { f32: 0 }, { f32: 0 }]),
    workgroups: rows <= MAX_GROUPS ? [rows, 1, 1] : [MAX_GROUPS, Math.ceil(rows / MAX_GROUPS), 1],
  };
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
  return {
    label,
    kernel: dfValuesKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([H, T, hd]),
    workgroups: grid1d(T * H * hd, WG),
  };
}
