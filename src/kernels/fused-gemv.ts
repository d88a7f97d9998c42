// The few-row form of the fused GEMM (shaders/common/gemm_gemv.wgsl): a decode step's launches (M ≤ the policy's
// gemvRows) read each weight once, coalesced, and sum every split of the launch's K partition in one workgroup —
// one dispatch, the bits of the tiled core and its split-K reduction (src/kernels/gemm-gemv.test.ts). Here: its
// workgroup shape per launch, and its pipeline constants. fused-linear.ts's gemmSpecs dispatches it.
import type { OverrideConstants } from '../gpu/pipelines';
import type { GemmPolicy } from './gemm-configs';
import { ceilDiv, MAX_GROUPS } from './grid';

/** The most rows a GEMV launch takes (its four accumulators per thread). */
export const GEMV_MAX_ROWS = 4;

/** One GEMV launch's workgroup: WG threads, NC tile columns, KS k per split and step, for `splits` splits. */
export interface GemvShape {
  WG: number;
  NC: number;
  KS: number;
  splits: number;
}

/** Workgroups that keep a large GPU busy (an H100/H200 has 132 SMs; two workgroups each). */
const TARGET_GROUPS = 264;
/** The WGSL's limits: staged W elements per thread and step, x slots per thread and step. */
const LOADS_MAX = 16;
const X_MAX = 4;
/** k per step at most (all splits together): longer steps only add workgroup memory. */
const SLOTS_MAX = 256;

/** Workgroup memory of a shape, in bytes: two buffers of [slots][NC / 4 + 1] vec4s of W and [slots] of x. */
export function gemvWorkgroupBytes(s: GemvShape): number {
  const slots = s.splits * s.KS;
  return 2 * slots * (s.NC / 4 + 1) * 16 + 2 * slots * 16;
}

/** Why a shape is invalid for the WGSL (null when valid), under a workgroup memory limit in bytes. */
export function gemvShapeProblem(s: GemvShape, maxBytes = 16384): string | null {
  const slots = s.splits * s.KS;
  if (s.NC % 8 || s.NC < 8) return `NC = ${s.NC} must be a positive multiple of 8`;
  if (s.KS % 8 || s.KS < 8) return `KS = ${s.KS} must be a positive multiple of 8`;
  if ((s.NC / 4) * s.splits > s.WG) return `${(s.NC / 4) * s.splits} summing threads > WG = ${s.WG}`;
  if (s.NC * slots > LOADS_MAX * s.WG) return `NC·splits·KS = ${s.NC * slots} > ${LOADS_MAX}·WG`;
  if (slots > X_MAX * s.WG) return `splits·KS = ${slots} > ${X_MAX}·WG`;
  const bytes = gemvWorkgroupBytes(s);
  if (bytes > maxBytes) return `${bytes} B of workgroup memory > ${maxBytes}`;
  return null;
}

/**
 * The shape of an [M ≤ 4, N] launch whose K partition has `splits` splits, or null where none fits `maxBytes`
 * of workgroup memory (the tiled core runs instead). Columns per workgroup: the most (8 … 64) that still give
 * about TARGET_GROUPS workgroups; then the longest step that fits the memory and the per-thread loads.
 */
export function gemvShape(N: number, splits: number, maxBytes = 16384): GemvShape | null {
  const NC = 8 * Math.min(8, Math.max(1, Math.floor(N / (8 * TARGET_GROUPS))));
  if (ceilDiv(N, NC) > MAX_GROUPS) return null;
  for (const WG of [128, 256]) {
    for (let KS = Math.floor(SLOTS_MAX / splits / 8) * 8; KS >= 8; KS -= 8) {
      const shape = { WG, NC, KS, splits };
      if (gemvShapeProblem(shape, maxBytes) === null) return shape;
    }
  }
  return null;
}

/** The GEMV's shape for an [M, N] launch of `splits` splits under `policy`, or null where it does not run it. */
export function gemvFor(M: number, N: number, splits: number, policy: GemmPolicy): GemvShape | null {
  if (M > Math.min(GEMV_MAX_ROWS, policy.gemvRows ?? 0)) return null;
  return gemvShape(N, splits, policy.limits?.maxComputeWorkgroupStorageSize);
}

/** The GEMV's own pipeline constants for a shape (on top of the launch's; M is a param). */
export function gemvConstants(s: GemvShape): OverrideConstants {
  return { GEMV_WG: s.WG, GEMV_NC: s.NC, GEMV_KS: s.KS, GEMV_SPLITS: s.splits };
}

/** The GEMV's grid over N tile columns. */
export function gemvWorkgroups(N: number, s: GemvShape): [number, number, number] {
  return [ceilDiv(N, s.NC), 1, 1];
}
