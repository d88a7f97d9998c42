// The device self-check of the subgroup GEMM core: before a device's policy runs it (GemmPolicy.subgroup), the core
// must give the tiled core's bits there. Drivers differ in how they lay subgroups out and in what they contract
// or reorder, and the core needs subgroups of exactly its GEMM_SG consecutive invocations (it returns NaN sums
// otherwise), so the check runs on the device itself: linear_bias at a shape that is a multiple of no block
// (x, W and the bias fixed pseudo-random numbers), whole and split-K (three splits, the last one short), on
// both cores, every output bit compared and a NaN guard band after each output checked. A compile or validation
// error, a difference, or a write past the end fails it; the policy then keeps the tiled core.
import type { PipelineCache } from '../gpu/pipelines';
import { mulberry32, randn } from '../numeric/random';
import { type GemmOpts, linearBiasOps } from './fused-linear';
import { GEMM_SMALL } from './gemm';
import { type GemmPolicy, UNKNOWN_ADAPTER } from './gemm-configs';
import {
  type SubgroupTiles,
  subgroupBlock,
  subgroupTilesFor,
  subgroupTilesName,
  subgroupTilesProblem,
} from './gemm-subgroup';
import { deviceHarness } from './harness';

export interface SubgroupCheck {
  /** The layout checked. */
  tiles: SubgroupTiles;
  ok: boolean;
  /** Why it failed, or what passed (for reports). */
  reason: string;
  /** Wall time of the check, compiles included. */
  ms: number;
}

/** Floats after each output that must stay NaN. */
const GUARD = 64;
/** K per split of the split run: a multiple of the tiled core's BK (16). */
const K_CHUNK = 64;

/** Runs the subgroup core with `tiles` and the tiled core on `device`; see the header. */
export async function checkSubgroupGemm(
  device: GPUDevice,
  pipelines: PipelineCache,
  tiles: SubgroupTiles,
): Promise<SubgroupCheck> {
  const t0 = performance.now();
  const done = (ok: boolean, reason: string): SubgroupCheck => ({
    tiles,
    ok,
    reason,
    ms: performance.now() - t0,
  });
  const problem = subgroupTilesProblem(tiles, device.limits.maxComputeInvocationsPerWorkgroup);
  if (problem) return done(false, `invalid layout: ${problem}`);
  if (!device.features.has('subgroups')) return done(false, 'the device has no subgroups');
  // A shape past one block on each side, with a ragged edge; K odd (the tiled core pads it to BK) and 3 splits.
  const { BM, BN } = subgroupBlock(tiles);
  const [M, N, K] = [BM + 3, BN + 13, 2 * K_CHUNK + 5];
  const rng = mulberry32(0x5eed);
  const h = deviceHarness(device, pipelines);
  try {
    const base = {
      x: h.upload(randn(rng, M * K)),
      w: h.upload(randn(rng, N * K, 1 / Math.sqrt(K))),
      b: h.upload(randn(rng, N, 0.1)),
      dummy: h.upload(new Float32Array(4)),
    };
    const outs: GPUBuffer[][] = [[], []];
    const specs = [UNKNOWN_ADAPTER, { ...UNKNOWN_ADAPTER, subgroup: tiles }].flatMap((policy, core) =>
      [undefined, K_CHUNK].flatMap((kChunk) => {
        const y = h.poisoned(M * N + GUARD);
        outs[core].push(y);
        const opts: GemmOpts = {
          policy,
          constants: { ...GEMM_SMALL },
          ...(kChunk ? { kChunk, workspace: (n: number) => h.poisoned(n) } : {}),
        };
        return linearBiasOps(`subgroup-check.${core}`, { ...base, y }, M, N, K, opts);
      }),
    );
    await h.run(specs);
    for (const [i, what] of ['whole', `split in ${K_CHUNK}`].entries()) {
      const a = new Uint32Array((await h.read(outs[0][i], M * N + GUARD)).buffer);
      const b = new Uint32Array((await h.read(outs[1][i], M * N + GUARD)).buffer);
      const at = a.findIndex((u, k) => u !== b[k]);
      if (at >= 0 && at < M * N)
        return done(
          false,
          `${what}: the sums differ from the tiled core's at element ${at} of ${M}×${N}×${K}`,
        );
      if (at >= 0) return done(false, `${what}: a write past the output's end, at ${at}`);
      if (a.subarray(0, M * N).some((u) => (u & 0x7f800000) === 0x7f800000))
        return done(false, `${what}: a non-finite sum`);
    }
    return done(
      true,
      `${subgroupTilesName(tiles)}: the tiled core's bits at ${M}×${N}×${K}, whole and split`,
    );
  } catch (e) {
    return done(false, `${(e as Error).message}`);
  } finally {
    h.release();
  }
}

/**
 * The policy a device asks for: `policy` with the subgroup core's layout for `subgroupSize` lanes (subgroupTilesFor)
 * where `want` (else the policy's own subgroupCore) asks for that core and the device has subgroups of a fixed size
 * the core takes; a layout the policy already names stays. The device's self-check decides (withSubgroupCheck).
 */
export function wantSubgroup(policy: GemmPolicy, subgroupSize: number | null, want?: boolean): GemmPolicy {
  if (policy.subgroup || !(want ?? policy.subgroupCore) || !subgroupSize) return policy;
  const tiles = subgroupTilesFor(subgroupSize);
  return tiles ? { ...policy, subgroup: tiles } : policy;
}

/** `policy` as a device runs it: its subgroup core only where `check` passed for that very layout. */
export function withSubgroupCheck(policy: GemmPolicy, check: SubgroupCheck | null): GemmPolicy {
  if (!policy.subgroup) return policy;
  const want = policy.subgroup;
  const same =
    check?.ok === true && Object.entries(want).every(([k, v]) => check.tiles[k as keyof SubgroupTiles] === v);
  if (same) return { ...policy, name: `${policy.name} + subgroup core ${subgroupTilesName(want)}` };
  const { subgroup: _, ...rest } = policy;
  return rest;
}
