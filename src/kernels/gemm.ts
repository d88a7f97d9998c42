// Launch helpers of the shared GEMM core (shaders/common/gemm_core.wgsl): tile configurations (the WGSL
// override constants BM, BN, BK, TM, TN, GEMM_BUFS), their validity under WebGPU's limits, and the grid.
import type { OverrideConstants } from '../gpu/pipelines';
import { ceilDiv, MAX_GROUPS } from './grid';

export interface GemmTiles {
  BM: number; // rows of x (tokens) per workgroup
  BN: number; // output columns per workgroup
  BK: number; // K per staging step
  TM: number; // rows per thread (4 or 8)
  TN: number; // columns per thread (4 or 8)
  GEMM_BUFS: number; // 1: single-, 2: double-buffered workgroup tiles
}

export const TILE_KEYS = ['BM', 'BN', 'BK', 'TM', 'TN', 'GEMM_BUFS'] as const;

/**
 * The WGSL defaults: 128×128 blocks, 8×8 per thread, 256 threads, single-buffered (9216 B), for large grids on
 * adapters without a measured table. (On an H100, 2026-11-25, 2048³: 0.668 ms, against 0.540 ms for
 * 128×64×16 8×4, which its table picks.)
 */
export const GEMM_DEFAULT: GemmTiles = {
  BM: 128,
  BN: 128,
  BK: 8,
  TM: 8,
  TN: 8,
  GEMM_BUFS: 1,
};

/** 64×64 blocks, 4×4 per thread, 256 threads (9216 B): 4× the workgroups of the default. */
export const GEMM_MEDIUM: GemmTiles = { BM: 64, BN: 64, BK: 16, TM: 4, TN: 4, GEMM_BUFS: 1 };

/** 32×64 blocks, 4×4 per thread, 128 threads, double-buffered (13824 B): few tokens, or few columns. */
export const GEMM_SMALL: GemmTiles = { BM: 32, BN: 64, BK: 16, TM: 4, TN: 4, GEMM_BUFS: 2 };

/**
 * A few rows (a decode step, M = 1): 32×64 blocks, 4×4 per thread, BK 32, single-buffered — half the K steps and
 * barriers of GEMM_SMALL, which is what a GEMV-like launch pays for. H100 (bench/decode-gemm.ts, 2026-11-25),
 * M = 1, against GEMM_SMALL: Pythia-1.4b LM head 0.29 vs 1.80 ms, dense_4h_to_h 0.29 vs 0.54 ms, qkv 0.077 vs
 * 0.141 ms; 410m LM head 0.15 vs 0.68 ms.
 */
export const GEMM_DECODE: GemmTiles = { BM: 32, BN: 64, BK: 32, TM: 4, TN: 4, GEMM_BUFS: 1 };

/** The most rows for which GEMM_DECODE is the default. */
const DECODE_ROWS = 8;

/**
 * Tiles for CPU adapters: 32×64 blocks, 8×8 per thread, 32 threads, BK 8 (3456 B). SwiftShader runs a
 * workgroup's invocations four at a time as coroutines that switch at every barrier, so few threads with big
 * register tiles win: measured in Node on SwiftShader (2 cores, 2026-11-23), x·W^T + b at 37×1024×256 took
 * 144 ms against 288–373 ms with GEMM_SMALL, 164 against 281 ms at 37×256×1024, 372 against 774 ms at
 * 129×1024×256. The sums are bit-identical whatever the tiles (k ascending within a split).
 */
export const GEMM_CPU: GemmTiles = { BM: 32, BN: 64, BK: 8, TM: 8, TN: 8, GEMM_BUFS: 1 };

/** Mirrors the WGSL constants GEMM_LOADS_MAX and the register tile's 8×8 maximum. */
const LOADS_MAX = 16;

/** Workgroups that keep a large GPU busy (an H100/H200 has 132 SMs; 2 resident workgroups each). */
const FULL_GRID = 256;

/**
 * Default tiles for an [M, N] output: the largest blocks whose grid still fills the GPU (a 128-row block
 * computes mostly zeros when M is small, and 16 workgroups leave most SMs idle). Picked from tuneGemm on an
 * H200 at Pythia-1.4B shapes: e.g. T = 128, N = 2048: SMALL 0.10 ms vs DEFAULT 0.31 ms; T = 128, N = 50304:
 * DEFAULT 0.82 ms vs SMALL 1.39 ms.
 */
export function gemmTilesFor(M: number, N = Number.POSITIVE_INFINITY): GemmTiles {
  const grid = (t: GemmTiles) => ceilDiv(M, t.BM) * ceilDiv(N, t.BN);
  if (M > 64 && grid(GEMM_DEFAULT) >= FULL_GRID) return GEMM_DEFAULT;
  if (M > 32 && grid(GEMM_MEDIUM) >= FULL_GRID) return GEMM_MEDIUM;
  return M <= DECODE_ROWS ? GEMM_DECODE : GEMM_SMALL;
}

export function gemmThreads(t: GemmTiles): number {
  return (t.BM / t.TM) * (t.BN / t.TN);
}

/** Workgroup memory of the two staged tiles, in bytes: groups of 4 rows × 8 k padded to 9 vec4s (144 B). */
export function gemmWorkgroupBytes(t: GemmTiles): number {
  return 144 * (t.BK / 8) * ((t.BM + t.BN) / 4) * t.GEMM_BUFS;
}

/** Why a tile configuration is invalid (null when valid) under the given limits (WebGPU defaults if none). */
export function gemmTilesProblem(
  t: GemmTiles,
  limits: { maxComputeInvocationsPerWorkgroup: number; maxComputeWorkgroupStorageSize: number } = {
    maxComputeInvocationsPerWorkgroup: 256,
    maxComputeWorkgroupStorageSize: 16384,
  },
): string | null {
  for (const k of TILE_KEYS) if (!Number.isInteger(t[k]) || t[k] < 0) return `${k} = ${t[k]} is not a u32`;
  if (t.TM !== 4 && t.TM !== 8) return `TM = ${t.TM} must be 4 or 8`;
  if (t.TN !== 4 && t.TN !== 8) return `TN = ${t.TN} must be 4 or 8`;
  if (t.BM % 32 || t.BN % 32) return `BM, BN (${t.BM}, ${t.BN}) must be multiples of 32`;
  if (t.BK % 8 || t.BK === 0) return `BK = ${t.BK} must be a multiple of 8`;
  if (t.GEMM_BUFS !== 1 && t.GEMM_BUFS !== 2) return `GEMM_BUFS = ${t.GEMM_BUFS} must be 1 or 2`;
  const tx = t.BN / t.TN;
  const wx = Math.min(tx, 8);
  if (tx % wx || (t.BM / t.TM) % (32 / wx))
    return `thread grid ${t.BM / t.TM}×${tx} is not made of ${32 / wx}×${wx} warps`;
  const threads = gemmThreads(t);
  if (threads > limits.maxComputeInvocationsPerWorkgroup) return `${threads} threads > limit`;
  if ((t.BM * t.BK) % threads || (t.BN * t.BK) % threads)
    return `BM·BK, BN·BK not multiples of ${threads} threads`;
  if ((t.BM * t.BK) / threads > LOADS_MAX || (t.BN * t.BK) / threads > LOADS_MAX) {
    return `more than ${LOADS_MAX} staged elements per thread`;
  }
  const bytes = gemmWorkgroupBytes(t);
  if (bytes > limits.maxComputeWorkgroupStorageSize) return `${bytes} B of workgroup memory > limit`;
  return null;
}

/**
 * The pipeline constants of a GEMM launch over an [M, N] output: `base` tiles (the default for it unless
 * given, see gemm-configs.ts), then the caller's
 * constants (precision, faults, or tile overrides) on top. Returns the constants and the tiles they amount
 * to (for the grid). The shape rules are checked here; the device's own limits when the pipeline is made
 * (tiles beyond the WebGPU defaults are for tuning on devices that grant more).
 */
export function gemmConstants(
  M: number,
  N: number,
  extra: OverrideConstants = {},
  base: GemmTiles = gemmTilesFor(M, N),
): { constants: OverrideConstants; tiles: GemmTiles } {
  const constants: OverrideConstants = { ...base, ...extra };
  const tiles = { ...GEMM_DEFAULT };
  for (const k of TILE_KEYS) tiles[k] = Number(constants[k]);
  const problem = gemmTilesProblem(tiles, {
    maxComputeInvocationsPerWorkgroup: 1024,
    maxComputeWorkgroupStorageSize: 65536,
  });
  if (problem) throw new Error(`invalid GEMM tiles ${JSON.stringify(tiles)}: ${problem}`);
  return { constants, tiles };
}

/** The grid over an [M, N] output: (ceil(N / BN), ceil(M / BM), split), each ≤ 65535. */
export function gemmWorkgroups(M: number, N: number, t: GemmTiles, split = 1): [number, number, number] {
  const gx = ceilDiv(N, t.BN);
  const gy = ceilDiv(M, t.BM);
  if (gx > MAX_GROUPS || gy > MAX_GROUPS) throw new Error(`GEMM grid ${gx}x${gy} exceeds ${MAX_GROUPS}`);
  return [gx, gy, split];
}

/** Tile configurations tuneGemm and bench/gemm-sweep.ts time (those beyond the device's limits are skipped). */
export const TUNE_CONFIGS: readonly GemmTiles[] = [
  GEMM_DEFAULT,
  GEMM_DECODE,
  { BM: 128, BN: 128, BK: 8, TM: 8, TN: 8, GEMM_BUFS: 2 }, // 18432 B: a raised limit
  { BM: 128, BN: 128, BK: 16, TM: 8, TN: 8, GEMM_BUFS: 1 }, // 18432 B: a raised limit
  { BM: 128, BN: 128, BK: 16, TM: 8, TN: 8, GEMM_BUFS: 2 }, // 36864 B: a raised limit
  { BM: 128, BN: 128, BK: 32, TM: 8, TN: 8, GEMM_BUFS: 1 }, // 36864 B: a raised limit
  { BM: 128, BN: 64, BK: 8, TM: 8, TN: 4, GEMM_BUFS: 1 },
  { BM: 128, BN: 64, BK: 8, TM: 8, TN: 4, GEMM_BUFS: 2 }, // 13824 B
  { BM: 128, BN: 64, BK: 16, TM: 8, TN: 4, GEMM_BUFS: 1 }, // 13824 B
  { BM: 128, BN: 64, BK: 32, TM: 8, TN: 4, GEMM_BUFS: 1 }, // 27648 B: a raised limit
  { BM: 64, BN: 128, BK: 16, TM: 8, TN: 8, GEMM_BUFS: 1 }, // 128 threads
  GEMM_MEDIUM,
  GEMM_SMALL,
  { ...GEMM_SMALL, GEMM_BUFS: 1 },
  { BM: 32, BN: 128, BK: 8, TM: 4, TN: 8, GEMM_BUFS: 2 }, // 128 threads
  GEMM_CPU, // 32 threads
  { BM: 128, BN: 256, BK: 8, TM: 8, TN: 8, GEMM_BUFS: 1 }, // 512 threads: a raised limit
  { BM: 256, BN: 128, BK: 8, TM: 8, TN: 8, GEMM_BUFS: 1 }, // 512 threads: a raised limit
];

export function tilesName(t: GemmTiles): string {
  return `${t.BM}x${t.BN}x${t.BK} ${t.TM}x${t.TN} buf${t.GEMM_BUFS}`;
}
