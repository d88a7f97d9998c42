// Which GEMM configuration the fused path uses for an (M, N, K) shape on an adapter: tile sizes per (M, N, K),
// and the split-K partition of K per (N, K). A table measured on a real GPU (bench/gemm-sweep.ts) serves the
// adapters it was measured on; a heuristic serves every other shape and adapter.
//
// Why the K partition depends on (N, K) and not on M: every output element sums its K products in ascending k
// within a split whatever the tiles are (the tile sizes only change what is staged where), and the splits are
// added in order. So with one partition per (N, K), row t of a GEMM is bit-identical whatever M is — a decoded
// token (M = 1, src/engine/decode.ts) gets exactly the bits of that row of a whole forward (M = T). A split
// count chosen per M would trade that for a few percent; the sweep measures both M = 128 and 512 and picks the
// partition that is best summed over them.
import { GEMM_CPU, type GemmTiles, gemmTilesFor, gemmTilesProblem } from './gemm';
import type { SubgroupTiles } from './gemm-subgroup';
import { ceilDiv } from './grid';

/** Split-K chunks are multiples of this (so of every BK the tile rules allow up to 64). */
export const K_CHUNK_GRANULE = 64;

/** Tiles and K per split of one GEMM launch (kChunk ≥ K: one dispatch, no workspace). */
export interface GemmConfig {
  tiles: GemmTiles;
  kChunk: number;
}

/** The adapters a policy is for, as `GPUAdapterInfo` describes them. */
export interface AdapterInfoLike {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
}

/** Measured best configurations: tiles per exact `${M}x${N}x${K}`, K per split per `${N}x${K}`. */
export interface GemmConfigTable {
  /** The adapter it was measured on, the software, and the date. */
  measuredOn: string;
  date: string;
  tiles: Readonly<Record<string, GemmTiles>>;
  kChunks: Readonly<Record<string, number>>;
}

/** How a device picks GEMM configurations. */
export interface GemmPolicy {
  /** For reports: which table or rule applies. */
  name: string;
  table: GemmConfigTable | null;
  /** Split K where the grid is small (false on CPU adapters, where a dispatch costs more than it gives). */
  splitK: boolean;
  /** A CPU adapter (SwiftShader): kernels without workgroup barriers where there is one (the reference linear). */
  cpu?: boolean;
  /** One tile configuration for every shape the table does not hold (CPU adapters), instead of the heuristic. */
  tiles?: GemmTiles;
  /**
   * Launches of at most this many rows (a decode step) run the GEMV form of the core (fused-gemv.ts: the same
   * bits, one dispatch with every split inside); none when absent. Hopper runs it (measured faster over a whole decode
   * step: bench/decode-gemm.ts; bench/RESULTS.md "Decode GEMV"); CPU adapters keep their barrier-free core.
   */
  gemvRows?: number;
  /**
   * Launches outside the GEMV run the subgroup core (shaders/common/gemm_subgroup.wgsl) with this layout: the
   * same bits as the tiled core with the configuration's tiles (whose BK still decides the K partition's rules).
   * Set on a device only by subgroupPolicy (gemm-subgroup-check.ts), after its self-check passed there.
   */
  subgroup?: SubgroupTiles;
  /**
   * Whether devices of this policy should run the subgroup core (where they have subgroups of one fixed size and
   * its self-check passes; EngineOptions.subgroupGemm overrides). False wherever it was measured: see HOPPER_POLICY
   * and CPU_ADAPTER.
   */
  subgroupCore?: boolean;
  /**
   * The longest K per split (a multiple of K_CHUNK_GRANULE): a K partition with longer splits is split further, to
   * at most MAX_SPLIT splits, for outputs narrower than CAP_WIDE_N. A decode step's GEMMs are latency-bound by each output's serial chain of K / splits
   * accumulate steps (the contract: a decoded row is that row of a whole forward, bit for bit, so the whole forward
   * shares the partition); absent, no cap.
   */
  maxKChunk?: number;
  /**
   * The tiled core's workgroup order: this many row blocks of one column block run one after the other (common/
   * gemm_core.wgsl GEMM_GROUP_M), so consecutive workgroups share their W tile in the L2, where a launch has more than
   * one row block; absent or 1, the grid's order (every column block of a row block first). The bits do not depend
   * on it.
   */
  groupM?: number;
  /** The fewest weights (N·K) of a launch that takes groupM's order (absent: every launch). */
  groupMinWeights?: number;
  /** The device's limits, when known: table tiles beyond them fall back to the heuristic. */
  limits?: { maxComputeInvocationsPerWorkgroup: number; maxComputeWorkgroupStorageSize: number };
}

/** The M at which the heuristic judges the grid of an (N, K) GEMM (a prompt of a hundred-odd tokens). */
const NOMINAL_M = 128;
/** Split-K aims at this many workgroups (an H100/H200 has 132 SMs; about 2 resident workgroups each). */
const SPLIT_TARGET = 2 * 132;
/** Fewest K per split: below this the reduction and the extra dispatch cost more than they save. */
const MIN_K_PER_SPLIT = 256;
const MAX_SPLIT = 16;

export const shapeKey = (M: number, N: number, K: number): string => `${M}x${N}x${K}`;
export const chunkKey = (N: number, K: number): string => `${N}x${K}`;

/** The K per split for `split` splits: ceil(K / split) rounded up to K_CHUNK_GRANULE (K itself for 1). */
export function chunkFor(K: number, split: number): number {
  if (split <= 1) return K;
  return Math.min(K, ceilDiv(ceilDiv(K, split), K_CHUNK_GRANULE) * K_CHUNK_GRANULE);
}

/**
 * The heuristic K partition of an (N, K) GEMM: none when the grid at NOMINAL_M rows has a quarter of
 * SPLIT_TARGET workgroups or more (larger M only adds workgroups); otherwise enough splits to reach about SPLIT_TARGET workgroups, each at least MIN_K_PER_SPLIT deep, at most
 * MAX_SPLIT.
 */
export function heuristicChunk(N: number, K: number): number {
  const t = gemmTilesFor(NOMINAL_M, N);
  const grid = ceilDiv(NOMINAL_M, t.BM) * ceilDiv(N, t.BN);
  if (grid >= SPLIT_TARGET / 4) return K;
  const s = Math.min(MAX_SPLIT, ceilDiv(SPLIT_TARGET, grid), Math.floor(K / MIN_K_PER_SPLIT));
  return chunkFor(K, s);
}

/** The configuration for (M, N, K): the policy's table where it has the shape (and the tiles fit), else the heuristic. */
export function chooseGemm(
  M: number,
  N: number,
  K: number,
  policy: GemmPolicy = UNKNOWN_ADAPTER,
): GemmConfig {
  const measured = policy.table?.tiles[shapeKey(M, N, K)];
  const fits = measured && (!policy.limits || gemmTilesProblem(measured, policy.limits) === null);
  const tiles = fits ? measured : (policy.tiles ?? gemmTilesFor(M, N));
  if (!policy.splitK) return { tiles, kChunk: K };
  const kChunk = policy.table?.kChunks[chunkKey(N, K)] ?? heuristicChunk(N, K);
  return { tiles, kChunk: N >= CAP_WIDE_N ? kChunk : cappedChunk(K, kChunk, policy.maxKChunk) };
}

/**
 * Outputs at least this wide keep their partition under a cap (maxKChunk): they fill the GPU even for one row (256+
 * workgroups of 64 columns), so a decode step does not wait on their chains (the 1.4b LM head at M = 1: 1.60 ms
 * unsplit, 1.54 in two splits; H200, 2026-11-27), and their partials would be the largest of all (the LM head's
 * S·T·V floats: 1.65 GB at 6.9b, T = 2048, in four splits).
 */
export const CAP_WIDE_N = 16384;

/** A K partition's chunk split further so that no split is longer than `cap` (at most MAX_SPLIT splits). */
export function cappedChunk(K: number, kChunk: number, cap?: number): number {
  if (!cap || kChunk <= cap || K <= cap) return kChunk;
  return Math.min(kChunk, chunkFor(K, Math.min(MAX_SPLIT, ceilDiv(K, cap))));
}

/** An adapter without a measured table: default-limit tiles by grid size, split-K where the grid is small. */
export const UNKNOWN_ADAPTER: GemmPolicy = {
  name: 'heuristic (no measured table)',
  table: null,
  splitK: true,
};

/** SwiftShader and other CPU adapters: no split-K (an extra dispatch costs more than the parallelism gives). */
export const CPU_ADAPTER: GemmPolicy = {
  name: 'CPU adapter (no split-K, few threads)',
  table: null,
  splitK: false,
  cpu: true,
  tiles: GEMM_CPU,
  // The subgroup core (4 lanes on SwiftShader) is 1.1–2.3× slower than the barrier-free one at every GEMM of the
  // embedded-size test model (T 37 and 128; Node on 2 cores, 2026-11-26, bench/gemm-subgroup.ts).
  subgroupCore: false,
};

const t = (BM: number, BN: number, BK: number, TM: number, TN: number, GEMM_BUFS: number): GemmTiles => ({
  BM,
  BN,
  BK,
  TM,
  TN,
  GEMM_BUFS,
});

/**
 * The Llama family's GEMM shapes on Hopper: SmolLM2-135M (d 576, q/k/v + rotary N = 960, gate/up N = 3072, down
 * K = 1536, LM head N = 49152) and Qwen2.5-0.5B (d 896, q/k/v N = 1152, gate/up N = 9728, down K = 4864, LM head
 * N = 151936) at T = 128 and 512, measured on an NVIDIA H100 80GB HBM3 (Dawn `webgpu` 0.6.2, driver 580.159.04)
 * by `bench/llama.ts --sweep` on 2026-11-27: 1494 timings over 17 tile configurations and the K partitions under
 * HOPPER_POLICY's cap, chosen as gemm-sweep.ts chooses (per (N, K) the partition best summed over both T, per
 * (M, N, K) the fastest tiles under it). Its whole forwards, before and after: bench/RESULTS.md "Llama fused forward
 * at GPU speed". Keys of their own: no GPT-NeoX shape shares an (N, K) with them.
 */
const HOPPER_LLAMA: Pick<GemmConfigTable, 'tiles' | 'kChunks'> = {
  tiles: {
    '128x960x576': t(32, 64, 32, 4, 4, 1),
    '512x960x576': t(32, 64, 32, 4, 4, 1),
    '128x576x576': t(64, 64, 16, 4, 4, 1),
    '512x576x576': t(32, 64, 16, 4, 4, 1),
    '128x3072x576': t(32, 64, 32, 4, 4, 1),
    '512x3072x576': t(64, 64, 16, 4, 4, 1),
    '128x576x1536': t(32, 64, 32, 4, 4, 1),
    '512x576x1536': t(128, 64, 16, 8, 4, 1),
    '128x49152x576': t(128, 64, 8, 8, 4, 1),
    '512x49152x576': t(128, 64, 8, 8, 4, 1),
    '128x1152x896': t(32, 64, 32, 4, 4, 1),
    '512x1152x896': t(128, 64, 16, 8, 4, 1),
    '128x896x896': t(32, 64, 16, 4, 4, 1),
    '512x896x896': t(128, 64, 8, 8, 4, 1),
    '128x9728x896': t(32, 64, 16, 4, 4, 1),
    '512x9728x896': t(128, 64, 8, 8, 4, 1), // single-buffered under groupM: 0.343 → 0.301 ms (2026-11-27 17:53)
    '128x896x4864': t(32, 64, 16, 4, 4, 1),
    '512x896x4864': t(128, 64, 8, 8, 4, 1),
    '128x151936x896': t(128, 64, 8, 8, 4, 1),
    '512x151936x896': t(128, 64, 8, 8, 4, 1),
  },
  kChunks: {
    '960x576': 576,
    '576x576': 128,
    '3072x576': 576,
    '576x1536': 256,
    '49152x576': 576,
    '1152x896': 256,
    '896x896': 128,
    '9728x896': 896,
    '896x4864': 448,
    '151936x896': 896,
  },
};

/**
 * Measured on an NVIDIA H100 80GB HBM3 (Dawn `webgpu` 0.6.2 over Vulkan, driver 580.159.04, timestamp
 * quantization off) by bench/gemm-sweep.ts on 2026-11-25 (the core of that date: grouped workgroup tiles,
 * register tile with constant indices, scalar global loads): 2465 timings over 17 tile configurations and up
 * to 8 K partitions for each GEMM shape of Pythia-70m/160m/410m at T = 128 and 512 and 2048³. Per (N, K) the
 * K partition whose best time summed over T = 128 and 512 is least; per (M, N, K) the fastest tiles under it
 * (as for the qkv shapes, N = 3d and K = d, which qkv_rotary splits the same way). One entry needs more than
 * WebGPU's default 16 KiB of workgroup memory (512x1024x4096: 18432 B); on a device without it chooseGemm
 * falls back to the heuristic. bench/RESULTS.md, "GEMM core (issue 21, 2026-11-25)", has the numbers. The Llama
 * family's shapes follow (HOPPER_LLAMA).
 */
export const HOPPER_TABLE: GemmConfigTable = {
  measuredOn: 'NVIDIA H100 80GB HBM3, Dawn webgpu 0.6.2 (Vulkan), driver 580.159.04',
  date: '2026-11-25',
  tiles: {
    '128x1536x512': t(64, 64, 16, 4, 4, 1),
    '512x1536x512': t(64, 64, 16, 4, 4, 1),
    '128x512x512': t(32, 64, 16, 4, 4, 1),
    '512x512x512': t(64, 64, 16, 4, 4, 1),
    '128x2048x512': t(32, 64, 16, 4, 4, 1),
    '512x2048x512': t(128, 64, 8, 8, 4, 1),
    '128x512x2048': t(64, 64, 16, 4, 4, 1),
    '512x512x2048': t(128, 64, 16, 8, 4, 1),
    '128x50304x512': t(128, 64, 8, 8, 4, 1),
    '512x50304x512': t(128, 64, 8, 8, 4, 1),
    '128x2304x768': t(128, 64, 16, 8, 4, 1),
    '512x2304x768': t(64, 64, 16, 4, 4, 1),
    '128x768x768': t(32, 64, 16, 4, 4, 1),
    '512x768x768': t(64, 64, 16, 4, 4, 1),
    '128x3072x768': t(32, 64, 16, 4, 4, 1),
    '512x3072x768': t(128, 64, 8, 8, 4, 1),
    '128x768x3072': t(32, 64, 16, 4, 4, 1),
    '512x768x3072': t(128, 64, 8, 8, 4, 1),
    '128x50304x768': t(128, 64, 8, 8, 4, 1),
    '512x50304x768': t(128, 64, 8, 8, 4, 1),
    '128x3072x1024': t(32, 64, 16, 4, 4, 1),
    '512x3072x1024': t(128, 64, 8, 8, 4, 1),
    '128x1024x1024': t(64, 64, 16, 4, 4, 1),
    '512x1024x1024': t(128, 64, 16, 8, 4, 1),
    '128x4096x1024': t(64, 64, 16, 4, 4, 1),
    '512x4096x1024': t(128, 64, 16, 8, 4, 1),
    '128x1024x4096': t(128, 64, 16, 8, 4, 1),
    '512x1024x4096': t(128, 128, 8, 8, 8, 2),
    '128x50304x1024': t(128, 64, 8, 8, 4, 1),
    '512x50304x1024': t(128, 64, 8, 8, 4, 1),
    '2048x2048x2048': t(128, 64, 16, 8, 4, 1),
    ...HOPPER_LLAMA.tiles,
  },
  kChunks: {
    '1536x512': 256,
    '512x512': 128,
    '2048x512': 192,
    '512x2048': 256,
    '50304x512': 512,
    '2304x768': 256,
    '768x768': 192,
    '3072x768': 384,
    '768x3072': 384,
    '50304x768': 768,
    '3072x1024': 512,
    '1024x1024': 256,
    '4096x1024': 1024,
    '1024x4096': 512,
    '50304x1024': 1024,
    '2048x2048': 2048,
    ...HOPPER_LLAMA.kChunks,
  },
};

/** NVIDIA Hopper (H100/H200): the measured table, the heuristic for other shapes. */
export const HOPPER_POLICY: GemmPolicy = {
  name: 'NVIDIA Hopper (measured table)',
  table: HOPPER_TABLE,
  splitK: true,
  // No decode GEMV (gemvRows absent): under the K cap below the tiled core is as fast or faster for whole decode
  // steps — 8 fused tokens 101.6–101.7 ms against 104.6–104.9 (1.4b) and 40.9–41.8 against 46.8–46.9 (410m), H100,
  // 2026-11-27 01:36 UTC, one call, two runs each (bench/decode-gemm.ts --caps 1024; bench/RESULTS.md "The K cap"). Without
  // the cap the GEMV was ahead at 1.4b (153.8–159.6 against 163.2–169.7 ms, H200, 2026-11-26).
  // No split longer than 1024 (the table's 70m–410m partitions have none; 1b and up split K = 2048 in two, 8192 in
  // eight; not the LM head, CAP_WIDE_N): H200, 2026-11-27 (bench/decode-gemm.ts --caps, bench/RESULTS.md "The K cap"), 1.4b's 8 fused tokens
  // 155–165 → 102–106 ms, its fused forward 32.7 → 22.9 ms at T = 128 and 69.9 → 62.2 at T = 512.
  maxKChunk: 1024,
  // The subgroup core (shaders/common/gemm_subgroup.wgsl, 32 lanes) is off: on an H200 (2026-11-26, bench/RESULTS.md
  // "Subgroup GEMM core") its best of 96 lane layouts ran 2048³ in 1.61 ms (10.7 TFLOP/s) against 0.540 ms (31.8)
  // for this table's tiled core, and 2.3–4.7× slower than the table at every Pythia-70m/160m/410m shape.
  subgroupCore: false,
  // Workgroups by groups of 8 row blocks per column block where W has 6 Mi weights or more (24 MiB as f32, half the
  // L2: an LM head, Qwen2.5-0.5B's gate/up): H100, 2026-11-27 (bench/gemm.ts --groups 1,8; bench/RESULTS.md "GEMM
  // workgroup order and chunked submits"), 128x64x8 8x4 at 512×9728×896 0.350 → 0.301 ms, at 512×151936×896 4.16 →
  // 4.04 ms; 2048³ (16 MiB of W) 0.545 → 0.541. Smaller W stays in the L2 anyway, and the order on every launch cost
  // the SmolLM2-135M and Qwen T = 128 forwards 0.1–0.3 ms of GPU time.
  groupM: 8,
  groupMinWeights: 6 * 2 ** 20,
};

/** GEMM_GROUP_M of a tiled-core launch under `policy` with BM-row blocks (1: the grid's own order). */
export function groupMFor(
  policy: GemmPolicy | undefined,
  M: number,
  N: number,
  K: number,
  BM: number,
): number {
  const g = policy?.groupM ?? 1;
  return g > 1 && M > BM && N * K >= (policy?.groupMinWeights ?? 0) ? g : 1;
}

/** The policy for an adapter: the measured table for the adapters it was measured on, CPU rules for software. */
export function gemmPolicyFor(info: AdapterInfoLike, limits?: GemmPolicy['limits']): GemmPolicy {
  const text = `${info.vendor} ${info.architecture} ${info.device} ${info.description}`.toLowerCase();
  let base = UNKNOWN_ADAPTER;
  if (/swiftshader|llvmpipe|lavapipe|software|\bcpu\b/.test(text)) base = CPU_ADAPTER;
  else if (/nvidia/.test(text) && /h100|h200|h800|gh200|hopper/.test(text)) base = HOPPER_POLICY;
  return limits ? { ...base, limits } : base;
}
