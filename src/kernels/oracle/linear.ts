import type { BufferRef } from '../../gpu/pipelines';
import type { DispatchSpec } from '../../gpu/program';
import { dispatchOf, kernelOf } from '../define';
import { ceilDiv, type KernelOpts, MAX_GROUPS } from '../grid';
import { DF_WEIGHT_INCLUDES } from './df-common';

export const dfLinearKernel = kernelOf('oracle/linear', DF_WEIGHT_INCLUDES, {
  x: 'read', // [M, K] df
  w: 'read', // [N, K] f32 or packed f16
  b: 'read', // [N] f32
  y: 'rw', // [M, N] df
});

/** A workgroup's threads (WG_X along N, WG_Y along M) and each thread's register tile (TM, TN ∈ {1, 2}). */
export interface DfLinearTile {
  WG_X: number;
  WG_Y: number;
  TM: number;
  TN: number;
}

/** The default tile: 16 × 16 threads, 2 × 2 each (a 32 × 32 block). */
export const DF_LINEAR_TILE: DfLinearTile = { WG_X: 16, WG_Y: 16, TM: 2, TN: 2 };
/** One output per thread: four times the threads, for outputs whose 32 × 32 blocks do not fill the GPU. */
export const DF_LINEAR_TILE_1X1: DfLinearTile = { WG_X: 16, WG_Y: 16, TM: 1, TN: 1 };

/**
 * The tile for an M × N output: 1 × 1 when the default gives fewer than 256 workgroups. Measured on an H100
 * (bench/compare-speed.ts --kernels, 2026-11-25, T = 128): Pythia-70m's attn_out and fc2 (N = 512) 1.9× faster,
 * qkv 1.3×; 410m's attn_out and fc2 (N = 1024) 6 % faster; wider outputs 2–4 % slower with 1 × 1.
 */
export function dfLinearTile(M: number, N: number): DfLinearTile {
  const t = DF_LINEAR_TILE;
  return ceilDiv(N, t.WG_X * t.TN) * ceilDiv(M, t.WG_Y * t.TM) < 256 ? DF_LINEAR_TILE_1X1 : t;
}

/**
 * y[M, N] = x[M, K] · W[N, K]^T (+ b[N]) in double-float — x, y df; W as stored (f32, or packed f16 with
 * W_F16 in opts.constants); pass `b: null` for no bias (a dummy buffer is bound). The tile (by default chosen by
 * shape) changes who computes an output, not how: every tile gives the same bits.
 */
export function dfLinear(
  label: string,
  buf: { x: GPUBuffer; w: BufferRef; b: GPUBuffer | null; y: GPUBuffer; dummy: GPUBuffer },
  M: number,
  N: number,
  K: number,
  opts: KernelOpts = {},
  tile: DfLinearTile = dfLinearTile(M, N),
): DispatchSpec {
  if (![1, 2].includes(tile.TM) || ![1, 2].includes(tile.TN) || tile.WG_X * tile.WG_Y > 256)
    throw new Error(`${label}: tile ${JSON.stringify(tile)} needs TM, TN in {1, 2} and at most 256 threads`);
  const gx = ceilDiv(N, tile.WG_X * tile.TN);
  const gy = ceilDiv(M, tile.WG_Y * tile.TM);
  if (gx > MAX_GROUPS || gy > MAX_GROUPS)
    throw new Error(`${label}: ${M}x${N} output needs too many workgroups`);
  return dispatchOf(
    label,
    dfLinearKernel,
    { ...tile, ...opts.constants },
    { x: buf.x, w: buf.w, b: buf.b ?? buf.dummy, y: buf.y },
    [M, N, K, buf.b ? 1 : 0],
    [gx, gy, 1],
  );
}
