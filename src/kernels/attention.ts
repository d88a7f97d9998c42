// Launchers for the three reference attention kernels: scores, causal softmax, weighted values.

import type { KernelDef } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import type { KernelOpts } from './grid';
import { ceilDiv, MAX_GROUPS } from './grid';

export const attnScoresKernel: KernelDef = {
  name: 'reference/attn_scores',
  file: 'reference/attn_scores.wgsl',
  includes: ['common/precision.wgsl'],
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'q', kind: 'read' }, // [H, T, hd]
    { name: 'k', kind: 'read' }, // [H, T, hd]
    { name: 's', kind: 'rw' }, // [H, T, T]
  ],
};

export const softmaxKernel: KernelDef = {
  name: 'reference/softmax',
  file: 'reference/softmax.wgsl',
  includes: ['common/precision.wgsl'],
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 's', kind: 'read' }, // [H, T, T]
    { name: 'p', kind: 'rw' }, // [H, T, T]
  ],
};

export const attnValuesKernel: KernelDef = {
  name: 'reference/attn_values',
  file: 'reference/attn_values.wgsl',
  includes: ['common/precision.wgsl'],
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'p', kind: 'read' }, // [H, T, T]
    { name: 'v', kind: 'read' }, // [H, T, hd]
    { name: 'ctx', kind: 'rw' }, // [T, H*hd]
  ],
};

const TILE = 16;
const WG = 128;

/** s[h, i, j] = q[h,i]·k[h,j] / sqrt(hd) for j <= i, else 0 — q, k: [H, T, hd], s: [H, T, T]. */
export function attnScores(
  label: string,
  b: { q: GPUBuffer; k: GPUBuffer; s: GPUBuffer },
  H: number,
  T: number,
  hd: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return {
    label,
    kernel: attnScoresKernel,
    constants: { TILE, ...opts.constants },
    buffers: b,
    params: paramsBytes([T, hd, { f32: 1 / Math.sqrt(hd) }]),
    workgroups: [ceilDiv(T, TILE), ceilDiv(T, TILE), H],
  };
}

/** Causal row softmax — s, p: [H, T, T]; one workgroup per row. */
export function softmaxCausal(
  label: string,
  b: { s: GPUBuffer; p: GPUBuffer },
  H: number,
  T: number,
  opts: KernelOpts = {},
): DispatchSpec {
  const rows = H * T;
  const x = Math.min(rows, MAX_GROUPS);
  return {
    label,
    kernel: softmaxKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([T, rows]),
    workgroups: [x, ceilDiv(rows, x), 1],
  };
}

/** ctx[i, h*hd + e] = Σ_j p[h,i,j] v[h,j,e] — p: [H, T, T], v: [H, T, hd], ctx: [T, H*hd]. */
export function attnValues(
  label: string,
  b: { p: GPUBuffer; v: GPUBuffer; ctx: GPUBuffer },
  H: number,
  T: number,
  hd: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return {
    label,
    kernel: attnValuesKernel,
    constants: { TILE, ...opts.constants },
    buffers: b,
    params: paramsBytes([T, hd, H]),
    workgroups: [ceilDiv(hd, TILE), ceilDiv(T, TILE), H],
  };
}
