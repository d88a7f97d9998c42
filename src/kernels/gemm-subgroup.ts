// Launch helpers of the subgroup GEMM core (shaders/common/gemm_subgroup.wgsl): its layouts (the WGSL override
// constants GEMM_SG, GEMM_SG_PM, GEMM_SG_TM, GEMM_SG_TN, GEMM_SG_WM, GEMM_SG_WN), their validity, the grid, and
// the layout to try for a subgroup size. A GemmPolicy runs it through `subgroup` (gemm-configs.ts), once the
// device's self-check (gemm-subgroup-check.ts) has seen it give the tiled core's bits.
import type { OverrideConstants } from '../gpu/pipelines';
import { ceilDiv, MAX_GROUPS } from './grid';

export interface SubgroupTiles {
  SG: number; // lanes per subgroup (the device's subgroup size)
  PM: number; // row phases: a subgroup is PM × (SG / PM) lanes
  TM: number; // rows per lane (4 or 8)
  TN: number; // columns per lane (4 or 8)
  WM: number; // subgroups per workgroup along M
  WN: number; // subgroups per workgroup along N
}

/** The WGSL override of each field. */
const CONSTANT_OF: Record<keyof SubgroupTiles, string> = {
  SG: 'GEMM_SG',
  PM: 'GEMM_SG_PM',
  TM: 'GEMM_SG_TM',
  TN: 'GEMM_SG_TN',
  WM: 'GEMM_SG_WM',
  WN: 'GEMM_SG_WN',
};

/** The pipeline constants the subgroup core declares beyond the tiled core's (never passed to another core). */
export const SUBGROUP_KEYS: readonly string[] = Object.values(CONSTANT_OF);

export function subgroupConstants(t: SubgroupTiles): OverrideConstants {
  const out: OverrideConstants = {};
  for (const [k, name] of Object.entries(CONSTANT_OF)) out[name] = t[k as keyof SubgroupTiles];
  return out;
}

/** Rows and columns of one workgroup's block. */
export function subgroupBlock(t: SubgroupTiles): { BM: number; BN: number } {
  return { BM: t.WM * t.PM * t.TM, BN: t.WN * (t.SG / t.PM) * t.TN };
}

export function subgroupThreads(t: SubgroupTiles): number {
  return t.WM * t.WN * t.SG;
}

/** Why a layout is invalid (null when valid) under a device's invocation limit (WebGPU's default if none). */
export function subgroupTilesProblem(t: SubgroupTiles, maxInvocations = 256): string | null {
  for (const k of Object.keys(CONSTANT_OF) as (keyof SubgroupTiles)[])
    if (!Number.isInteger(t[k]) || t[k] < 1) return `${k} = ${t[k]} is not a positive integer`;
  if (t.SG & (t.SG - 1) || t.SG > 128) return `SG = ${t.SG} is not a power of two up to 128`;
  if (t.SG % t.PM) return `PM = ${t.PM} does not divide SG = ${t.SG}`;
  if (t.TM !== 4 && t.TM !== 8) return `TM = ${t.TM} must be 4 or 8`;
  if (t.TN !== 4 && t.TN !== 8) return `TN = ${t.TN} must be 4 or 8`;
  const threads = subgroupThreads(t);
  if (threads > maxInvocations) return `${threads} invocations > ${maxInvocations}`;
  return null;
}

/** The grid over an [M, N] output: (ceil(N / block columns), ceil(M / block rows), split), each ≤ 65535. */
export function subgroupWorkgroups(
  M: number,
  N: number,
  t: SubgroupTiles,
  split = 1,
): [number, number, number] {
  const { BM, BN } = subgroupBlock(t);
  const gx = ceilDiv(N, BN);
  const gy = ceilDiv(M, BM);
  if (gx > MAX_GROUPS || gy > MAX_GROUPS)
    throw new Error(`subgroup GEMM grid ${gx}x${gy} exceeds ${MAX_GROUPS}`);
  return [gx, gy, split];
}

/**
 * The layout to try on a device whose subgroups are `size` lanes: 8×8 sums per lane, row phases the square
 * root of the size (rounded down to a power of two), four subgroups per workgroup; null for sizes the core
 * does not take (none below 4, none above 64).
 */
export function subgroupTilesFor(size: number): SubgroupTiles | null {
  if (!Number.isInteger(size) || size < 4 || size > 64 || size & (size - 1)) return null;
  const PM = 2 ** Math.floor(Math.log2(size) / 2);
  return { SG: size, PM, TM: 8, TN: 8, WM: 2, WN: 2 };
}

export function subgroupTilesName(t: SubgroupTiles): string {
  const { BM, BN } = subgroupBlock(t);
  return `sg${t.SG} ${t.PM}x${t.SG / t.PM} ${t.TM}x${t.TN} ${t.WM}x${t.WN} (${BM}x${BN})`;
}
