// The oracle's df linear layer under every register tile against its default tile, bit for bit: a tile changes
// which thread computes an output, never the output's arithmetic (the same df products, summed in the same
// blocks, in the same order), so the hi and lo words must be equal, not merely close. Fresh random inputs that
// use both halves of each df value (the seed is printed on failure; replay with KERNEL_SEED=<seed>), outputs
// poisoned with NaN, sizes that are not multiples of any block (16 … 32) or of BK. DF_FMA = false on
// SwiftShader (its fma is not fused).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../numeric/random';
import { createHarness, freshSeed, type Harness } from '../testing';
import { DF_LINEAR_TILE, type DfLinearTile, dfLinear } from './linear';
import { poisonedDf, randDf } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

const tiles: DfLinearTile[] = [
  { WG_X: 16, WG_Y: 16, TM: 1, TN: 1 },
  { WG_X: 16, WG_Y: 8, TM: 2, TN: 1 },
  { WG_X: 8, WG_Y: 16, TM: 1, TN: 2 },
  { WG_X: 8, WG_Y: 8, TM: 2, TN: 2 },
];

describe('oracle df linear tiles are bit-identical to the default tile', () => {
  it.each([
    [37, 45, 70],
    [1, 33, 16],
    [5, 70, 33],
  ] as const)('M=%i N=%i K=%i', async (M, N, K) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const x = h.upload(randDf(rng, M * K).pairs);
    const w = h.upload(randDf(rng, N * K, 1 / Math.sqrt(K)).pairs.filter((_, i) => i % 2 === 0));
    const b = h.upload(randDf(rng, N, 0.1).pairs.filter((_, i) => i % 2 === 0));
    const dummy = h.upload(new Float32Array(4));
    const opts = { constants: { DF_FMA: false } };
    const ys = [DF_LINEAR_TILE, ...tiles].map(() => poisonedDf(h, M * N));
    await h.run(
      [DF_LINEAR_TILE, ...tiles].map((t, i) =>
        dfLinear(`linear${i}`, { x, w, b, y: ys[i], dummy }, M, N, K, opts, t),
      ),
    );
    const bits = await Promise.all(ys.map(async (y) => new Uint32Array((await h.read(y, 2 * M * N)).buffer)));
    const nan = bits[0].findIndex((u) => (u & 0x7f800000) === 0x7f800000);
    expect(nan, `seed ${seed}: the default tile left a non-finite word at ${nan}`).toBe(-1);
    tiles.forEach((t, i) => {
      const at = bits[i + 1].findIndex((u, j) => u !== bits[0][j]);
      expect(at, `seed ${seed}: tile ${JSON.stringify(t)} differs at word ${at} (${M}×${N}×${K})`).toBe(-1);
    });
  });
});
