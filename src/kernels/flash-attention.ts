// Launcher for the fused flash-attention kernel (shaders/fused/flash_attention.wgsl): scores, causal softmax
// and the value product of one layer in one dispatch, with an online softmax over key tiles.
import type { KernelDef, OverrideConstants } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import { ceilDiv, MAX_GROUPS } from './grid';

export const flashAttentionKernel: KernelDef = {
  name: 'fused/flash_attention',
  file: 'fused/flash_attention.wgsl',
  includes: ['common/precision.wgsl'],
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'q', kind: 'read' }, // [H, T, hd]
    { name: 'k', kind: 'read' }, // [H, T, hd]
    { name: 'v', kind: 'read' }, // [H, T, hd]
    { name: 'ctx', kind: 'rw' }, // [T, H*hd]
  ],
};

/** Query rows per workgroup (the shader's BQ default). */
export const FLASH_BQ = 16;
/** Keys per tile (the shader's BK default). */
export const FLASH_BK = 8;
/** Widest head the kernel supports (MAX_HD in the shader; also ACC_N·BK with the default BK). */
export const FLASH_MAX_HEAD_DIM = 128;
/** Output columns each thread accumulates (ACC_N in the shader): hd <= ACC_N·BK. */
const ACC_N = 16;
/** WebGPU's default limits, which the kernel stays within. */
const MAX_WG_STORAGE = 16384;
const MAX_INVOCATIONS = 256;

/** Workgroup storage of the kernel with these tiles: q tile + K/V tile + scores + probabilities. */
export function flashWorkgroupBytes(BQ: number, BK: number, hd = FLASH_MAX_HEAD_DIM): number {
  return 4 * ((BQ + BK) * hd + 2 * BQ * BK);
}

/**
 * ctx[i, h*hd + e] = Σ_{j<=i} softmax_j(q[h,i]·k[h,j] / sqrt(hd)) v[h,j,e] — q, k, v: [H, T, hd],
 * ctx: [T, H*hd]. `opts.constants` (precision, fault switches, BQ/BK) are merged over the default tiles.
 */
export function flashAttention(
  label: string,
  b: { q: GPUBuffer; k: GPUBuffer; v: GPUBuffer; ctx: GPUBuffer },
  H: number,
  T: number,
  hd: number,
  opts: { constants?: OverrideConstants } = {},
): DispatchSpec {
  const constants: OverrideConstants = { BQ: FLASH_BQ, BK: FLASH_BK, MAX_HD: hd, ...opts.constants };
  const BQ = Number(constants.BQ);
  const BK = Number(constants.BK);
  if (!Number.isInteger(hd) || hd < 1 || hd > FLASH_MAX_HEAD_DIM) {
    throw new Error(`${label}: flash attention supports head_dim 1..${FLASH_MAX_HEAD_DIM}, got ${hd}`);
  }
  if (!Number.isInteger(BQ) || !Number.isInteger(BK) || BQ < 1 || BK < 1 || BQ * BK > MAX_INVOCATIONS) {
    throw new Error(
      `${label}: flash attention tiles BQ=${BQ} BK=${BK} need 1..${MAX_INVOCATIONS} invocations`,
    );
  }
  if (flashWorkgroupBytes(BQ, BK, hd) > MAX_WG_STORAGE) {
    throw new Error(`${label}: flash attention tiles BQ=${BQ} BK=${BK} need more than ${MAX_WG_STORAGE} B`);
  }
  if (hd > ACC_N * BK) {
    throw new Error(`${label}: flash attention with BK=${BK} supports head_dim <= ${ACC_N * BK}, got ${hd}`);
  }
  const tiles = ceilDiv(T, BQ);
  if (tiles > MAX_GROUPS || H > MAX_GROUPS)
    throw new Error(`${label}: T=${T} H=${H} exceed the dispatch grid`);
  return {
    label,
    kernel: flashAttentionKernel,
    constants,
    buffers: b,
    params: paramsBytes([T, hd, H, { f32: 1 / Math.sqrt(hd) }]),
    workgroups: [tiles, H, 1],
  };
}
