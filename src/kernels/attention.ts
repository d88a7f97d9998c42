// Launchers for the three reference attention kernels: scores, causal softmax, weighted values. Each takes
// optional positions (KV-cache decoding, src/kernels/positions.ts): query rows at p0.., keys 0 .. p0 + T − 1
// read from [H, rows, hd] buffers; score and probability rows are Tk = p0 + T long.

import type { KernelDef } from '../gpu/pipelines';
import type { DispatchSpec } from '../gpu/program';
import { type DispatchParams, dispatchOf, type HeadsLauncher, kernelOf } from './define';
import type { KernelOpts } from './grid';
import { ceilDiv, MAX_GROUPS } from './grid';
import { type KvPositions, kvPositions } from './positions';

export const attnScoresKernel = kernelOf('reference/attn_scores', ['common/precision.wgsl'], {
  q: 'read', // [H, T, hd]
  k: 'read', // [H, rows, hd]
  s: 'rw', // [H, T, Tk]
});

export const softmaxKernel = kernelOf('reference/softmax', ['common/precision.wgsl'], {
  s: 'read', // [H, T, Tk]
  p: 'rw', // [H, T, Tk]
});

export const attnValuesKernel = kernelOf('reference/attn_values', ['common/precision.wgsl'], {
  p: 'read', // [H, T, Tk]
  v: 'read', // [H, rows, hd]
  ctx: 'rw', // [T, H*hd]
});

const TILE = 16;
const WG = 128;

/** The launcher of `kernel` with its params and grid from (H, T, hd) and the positions (p0, rows). */
function tiled<B extends DispatchSpec['buffers']>(
  kernel: KernelDef,
  shape: (
    H: number,
    T: number,
    hd: number,
    p0: number,
    rows: number,
  ) => [DispatchParams, DispatchSpec['workgroups']],
): HeadsLauncher<B, [at?: KvPositions]> {
  return (label, b, H, T, hd, opts = {}, at) => {
    const { p0, rows } = kvPositions(label, T, at);
    const [params, grid] = shape(H, T, hd, p0, rows);
    return dispatchOf(label, kernel, { TILE, ...opts.constants }, b, params, grid);
  };
}

/**
 * s[h, i, j] = q[h,i]·k[h,j] / sqrt(hd) for j <= p0 + i, else 0 — q: [H, T, hd], k: [H, rows, hd],
 * s: [H, T, Tk] (Tk = p0 + T; a whole forward: p0 = 0, rows = T).
 */
export const attnScores = tiled<{ q: GPUBuffer; k: GPUBuffer; s: GPUBuffer }>(
  attnScoresKernel,
  (H, T, hd, p0, rows) => [
    [T, hd, { f32: 1 / Math.sqrt(hd) }, p0, rows],
    [ceilDiv(p0 + T, TILE), ceilDiv(T, TILE), H],
  ],
);

/** ctx[i, h*hd + e] = Σ_j p[h,i,j] v[h,j,e] — p: [H, T, Tk], v: [H, rows, hd], ctx: [T, H*hd]. */
export const attnValues = tiled<{ p: GPUBuffer; v: GPUBuffer; ctx: GPUBuffer }>(
  attnValuesKernel,
  (H, T, hd, p0, rows) => [
    [T, hd, H, p0, rows],
    [ceilDiv(hd, TILE), ceilDiv(T, TILE), H],
  ],
);

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
  // PLAIN (CPU adapters): a thread per row, WG rows per workgroup (the kernel's lanes are WG = 128).
  const groups = opts.constants?.PLAIN === true ? ceilDiv(rows, WG) : rows;
  const x = Math.min(groups, MAX_GROUPS);
  return dispatchOf(
    label,
    softmaxKernel,
    { WG, ...opts.constants },
    b,
    [T, rows, p0],
    [x, ceilDiv(groups, x), 1],
  );
}

/** The Llama family's attention shape: KV heads (grouped-query attention) and a sliding window (absent: none). */
export interface AttnShape {
  /** Query heads H and KV heads: k and v are [kvHeads, rows, hd], query head h reads KV head floor(h / (H / kvHeads)). */
  H: number;
  kvHeads: number;
  window?: number | null;
}

/**
 * The override constants that give the three reference attention kernels a GQA / sliding-window shape
 * (KV_GROUP = H / kvHeads, WINDOW; softmax reads only WINDOW), and the same for the fused flash attention
 * (shaders/fused/flash_attention.wgsl): merge them into each launch's opts.constants. MHA
 * without a window gives {}, GPT-NeoX's kernels unchanged.
 */
export function attnShapeConstants(
  label: string,
  s: AttnShape,
): { scores: KernelConsts; softmax: KernelConsts; values: KernelConsts; flash: KernelConsts } {
  if (!(s.kvHeads >= 1) || s.H % s.kvHeads !== 0)
    throw new Error(`${label}: ${s.H} query heads cannot be grouped over ${s.kvHeads} KV heads`);
  const w = s.window ?? 0;
  if (!Number.isInteger(w) || w < 0)
    throw new Error(`${label}: sliding window ${s.window} must be a positive integer`);
  const group = s.H / s.kvHeads;
  const kv: KernelConsts = group === 1 ? {} : { KV_GROUP: group };
  const win: KernelConsts = w === 0 ? {} : { WINDOW: w };
  return { scores: { ...kv, ...win }, softmax: win, values: kv, flash: { ...kv, ...win } };
}

type KernelConsts = Record<string, number>;
