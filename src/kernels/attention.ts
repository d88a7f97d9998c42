// Launchers for the three reference attention kernels: scores, causal softmax, weighted values. Each takes
// optional positions (KV-cache decoding, src/kernels/positions.ts): query rows at p0.., keys 0 .. p0 + T − 1
// read from [H, rows, hd] buffers; score and probability rows are Tk = p0 + T long.

import type { KernelDef } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import type { KernelOpts } from './grid';
import { ceilDiv, MAX_GROUPS } from './grid';
import { type KvPositions, kvPositions } from './positions';

export const attnScoresKernel: KernelDef = {
  name: 'reference/attn_scores',
  file: 'reference/attn_scores.wgsl',
  includes: ['common/precision.wgsl'],
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'q', kind: 'read' }, // [H, T, hd]
    { name: 'k', kind: 'read' }, // [H, rows, hd]
    { name: 's', kind: 'rw' }, // [H, T, Tk]
  ],
};

export const softmaxKernel: KernelDef = {
  name: 'reference/softmax',
  file: 'reference/softmax.wgsl',
  includes: ['common/precision.wgsl'],
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 's', kind: 'read' }, // [H, T, Tk]
    { name: 'p', kind: 'rw' }, // [H, T, Tk]
  ],
};

export const attnValuesKernel: KernelDef = {
  name: 'reference/attn_values',
  file: 'reference/attn_values.wgsl',
  includes: ['common/precision.wgsl'],
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'p', kind: 'read' }, // [H, T, Tk]
    { name: 'v', kind: 'read' }, // [H, rows, hd]
    { name: 'ctx', kind: 'rw' }, // [T, H*hd]
  ],
};

const TILE = 16;
const WG = 128;

/**
 * s[h, i, j] = q[h,i]·k[h,j] / sqrt(hd) for j <= p0 + i, else 0 — q: [H, T, hd], k: [H, rows, hd],
 * s: [H, T, Tk] (Tk = p0 + T; a whole forward: p0 = 0, rows = T).
 */
export function attnScores(
  label: string,
  b: { q: GPUBuffer; k: GPUBuffer; s: GPUBuffer },
  H: number,
  T: number,
  hd: number,
  opts: KernelOpts = {},
  at?: KvPositions,
): DispatchSpec {
  const { p0, rows } = kvPositions(label, T, at);
  return {
    label,
    kernel: attnScoresKernel,
    constants: { TILE, ...opts.constants },
    buffers: b,
    params: paramsBytes([T, hd, { f32: 1 / Math.sqrt(hd) }, p0, rows]),
    workgroups: [ceilDiv(p0 + T, TILE), ceilDiv(T, TILE), H],
  };
}

/** Causal row softmax over columns j <= p0 + i — s, p: [H, T, Tk] (Tk = p0 + T); one workgroup per row. */
export function softmaxCausal(
  label: string,
  b: { s: GPUBuffer; p: GPUBuffer },
  H: number,
  T: number,
  opts: KernelOpts = {},
  at?: KvPositions,
): DispatchSpec {
  const { p0 } = kvPositions(label, T, at);
  const rows = H * T;
  const x = Math.min(rows, MAX_GROUPS);
  return {
    label,
    kernel: softmaxKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([T, rows, p0]),
    workgroups: [x, ceilDiv(rows, x), 1],
  };
}

/** ctx[i, h*hd + e] = Σ_j p[h,i,j] v[h,j,e] — p: [H, T, Tk], v: [H, rows, hd], ctx: [T, H*hd]. */
export function attnValues(
  label: string,
  b: { p: GPUBuffer; v: GPUBuffer; ctx: GPUBuffer },
  H: number,
  T: number,
  hd: number,
  opts: KernelOpts = {},
  at?: KvPositions,
): DispatchSpec {
  const { p0, rows } = kvPositions(label, T, at);
  return {
    label,
    kernel: attnValuesKernel,
    constants: { TILE, ...opts.constants },
    buffers: b,
    params: paramsBytes([T, hd, H, p0, rows]),
    workgroups: [ceilDiv(hd, TILE), ceilDiv(T, TILE), H],
  };
}
