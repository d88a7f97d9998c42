// Launcher for the fused flash-attention kernel (shaders/fused/flash_attention.wgsl): scores, causal softmax
// and the value product of one layer in one dispatch, with an online softmax over key chunks. One query row
// per thread column (q and the output accumulators in registers); BK / 8 threads per row split the keys.
// Heads wider than 128 (up to 256) take two passes over halves of the output dims, q read from memory.

import type { OverrideConstants } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import { kernelOf } from './define';
import { ceilDiv, MAX_GROUPS } from './grid';
import { type KvPositions, kvPositions } from './positions';

export const flashAttentionKernel = kernelOf('fused/flash_attention', ['common/precision.wgsl'], {
  q: 'read', // [H, T, hd]
  k: 'read', // [H, rows, hd] (rows = T in a whole forward)
  v: 'read', // [H, rows, hd]
  ctx: 'rw', // [T, H*hd]
});

/** Keys per online-softmax step (KC in the shader): the first step covers keys 0..7 of every row. */
export const FLASH_KEY_CHUNK = 8;
/** Query rows per workgroup (BQ) for head_dim <= 64; see flashTiles for wider heads. */
export const FLASH_BQ = 32;
/** Keys per staged K/V tile (BK, a multiple of FLASH_KEY_CHUNK) for head_dim <= 64: BK / 8 threads per row. */
export const FLASH_BK = 32;
/** Widest head held in one pass (HD4_CAP·4 in the shader: a row of accumulators in registers). */
export const FLASH_REGS_HEAD_DIM = 128;
/** Widest head the kernel supports: NPASS passes of at most FLASH_REGS_HEAD_DIM output dims each. */
export const FLASH_MAX_HEAD_DIM = 256;
/** WebGPU's default limits, which the kernel stays within. */
const MAX_WG_STORAGE = 16384;
const MAX_INVOCATIONS = 256;

/** Passes over the output dims for a head of hd (the NPASS override): one up to 128, two up to 256. */
export function flashPasses(hd: number): number {
  return Math.ceil(hd / FLASH_REGS_HEAD_DIM);
}

/**
 * Workgroup storage of the kernel with these tiles: the K tile (vec4 rows of hd4 = ceil(hd/4)) and the V tile
 * of one pass (rows of oc4 = ceil(hd4 / passes)), reused for merging the partial row states of the BK/8
 * threads of a row (BQ rows of oc4 + 1 vec4s).
 */
export function flashWorkgroupBytes(BQ: number, BK: number, hd = FLASH_REGS_HEAD_DIM, passes = 1): number {
  const hd4 = Math.ceil(hd / 4);
  const oc4 = Math.ceil(hd4 / passes);
  return 16 * Math.max(BK * (hd4 + oc4), BK > FLASH_KEY_CHUNK ? BQ * (oc4 + 1) : 0);
}

/**
 * Default tiles for a head dimension. They depend on hd alone, so overriding BQ alone (as the determinism check
 * does) keeps BK, and with it every row's arithmetic: results are bit-identical for any BQ.
 */
export function flashTiles(hd: number): { BQ: number; BK: number } {
  if (hd <= 64) return { BQ: FLASH_BQ, BK: FLASH_BK };
  if (hd <= 84) return { BQ: 32, BK: 24 }; // 2·24·21 vec4s and 32·22 fit 16 KiB
  if (hd <= FLASH_REGS_HEAD_DIM) return { BQ: 16, BK: 16 };
  return { BQ: 32, BK: FLASH_KEY_CHUNK }; // two passes: 8·(64 + 32) vec4s = 12 KiB at hd 256, no merge
}

/** The one-line reason head_dim hd cannot run, or null (integers 1..FLASH_MAX_HEAD_DIM run). */
export function headDimProblem(hd: number): string | null {
  if (Number.isInteger(hd) && hd >= 1 && hd <= FLASH_MAX_HEAD_DIM) return null;
  return `head_dim ${hd} is not supported: the attention kernels take an integer head_dim 1..${FLASH_MAX_HEAD_DIM}`;
}

/**
 * ctx[i, h*hd + e] = Σ_{j<=i} softmax_j(q[h,i]·k[h,j] / sqrt(hd)) v[h,j,e] — q, k, v: [H, T, hd],
 * ctx: [T, H*hd]. `opts.constants` (precision, fault switches, BQ/BK) are merged over the default tiles.
 * With `at` (KV-cache decoding) the T query rows are positions at.p0.., k and v are [H, at.rows, hd] and keys
 * 0 .. at.p0 + T − 1 are read; each row is bit-identical to that row of a whole forward.
 */
export function flashAttention(
  label: string,
  b: { q: GPUBuffer; k: GPUBuffer; v: GPUBuffer; ctx: GPUBuffer },
  H: number,
  T: number,
  hd: number,
  opts: { constants?: OverrideConstants } = {},
  at?: KvPositions,
): DispatchSpec {
  const { p0, rows } = kvPositions(label, T, at);
  if (!Number.isInteger(hd) || hd < 1 || hd > FLASH_MAX_HEAD_DIM) {
    throw new Error(`${label}: flash attention supports head_dim 1..${FLASH_MAX_HEAD_DIM}, got ${hd}`);
  }
  const maxHd0 = Number(opts.constants?.MAX_HD ?? hd);
  const constants: OverrideConstants = {
    ...flashTiles(hd),
    MAX_HD: hd,
    // One pass with q in registers up to 128 dims, two passes with q read from memory above.
    NPASS: flashPasses(maxHd0),
    Q_REGS: Math.ceil(maxHd0 / 4) <= FLASH_REGS_HEAD_DIM / 4,
    ...opts.constants,
  };
  const BQ = Number(constants.BQ);
  const BK = Number(constants.BK);
  const maxHd = Number(constants.MAX_HD);
  const passes = Number(constants.NPASS);
  if (!Number.isInteger(maxHd) || maxHd < hd || maxHd > FLASH_MAX_HEAD_DIM) {
    throw new Error(`${label}: flash attention MAX_HD=${maxHd} must be in ${hd}..${FLASH_MAX_HEAD_DIM}`);
  }
  const hd4 = Math.ceil(maxHd / 4);
  if (!Number.isInteger(passes) || passes < 1 || Math.ceil(hd4 / passes) > FLASH_REGS_HEAD_DIM / 4) {
    throw new Error(
      `${label}: flash attention NPASS=${passes} must be an integer with ceil(${hd4} / NPASS) <= ${FLASH_REGS_HEAD_DIM / 4} vec4s per pass`,
    );
  }
  if (constants.Q_REGS === true && hd4 > FLASH_REGS_HEAD_DIM / 4) {
    throw new Error(
      `${label}: flash attention Q_REGS holds at most ${FLASH_REGS_HEAD_DIM} dims, MAX_HD=${maxHd}`,
    );
  }
  if (!Number.isInteger(BK) || BK < FLASH_KEY_CHUNK || BK % FLASH_KEY_CHUNK !== 0) {
    throw new Error(`${label}: flash attention BK=${BK} must be a positive multiple of ${FLASH_KEY_CHUNK}`);
  }
  const threads = BQ * (BK / FLASH_KEY_CHUNK);
  if (!Number.isInteger(BQ) || BQ < 1 || threads > MAX_INVOCATIONS) {
    throw new Error(
      `${label}: flash attention tiles BQ=${BQ} BK=${BK} need ${threads} invocations (1..${MAX_INVOCATIONS})`,
    );
  }
  if (flashWorkgroupBytes(BQ, BK, maxHd, passes) > MAX_WG_STORAGE) {
    throw new Error(`${label}: flash attention tiles BQ=${BQ} BK=${BK} need more than ${MAX_WG_STORAGE} B`);
  }
  const tiles = ceilDiv(T, BQ);
  if (tiles > MAX_GROUPS || H > MAX_GROUPS)
    throw new Error(`${label}: T=${T} H=${H} exceed the dispatch grid`);
  return {
    label,
    kernel: flashAttentionKernel,
    constants,
    buffers: b,
    params: paramsBytes([T, hd, H, { f32: 1 / Math.sqrt(hd) }, p0, rows]),
    workgroups: [H, tiles, 1],
  };
}
