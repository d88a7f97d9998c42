// The blocked, rows and plain (barrier-free) kernels of the reference linear layer against the plain 16 × 16 kernel, bit for bit: the
// same sums in the same order, so every output's bits must be equal (not merely close). Fresh random inputs per
// run (the seed is printed on failure; replay with KERNEL_SEED=<seed>), outputs poisoned with NaN, sizes that
// are not multiples of any tile (16, the 4 × 4 register tile, the rows kernel's NR and KC), K below, at and past
// one staging step, with and without bias, f32 and packed-f16 weights, fp16 accumulation and bf16 storage.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packF16 } from '../engine/gpu-model';
import { mulberry32, randn } from '../numeric/random';
import { linearBlocked, linearPlain, linearRows, linearTiled } from './linear';
import { createHarness, freshSeed, type Harness } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

const cases: [number, number, number][] = [
  [1, 37, 23],
  [3, 70, 300],
  [5, 45, 16],
  [37, 70, 90],
];
type Mode = { bias: boolean; f16w?: boolean; constants?: Record<string, number | boolean> };
const modes: [string, Mode][] = [
  ['f32, bias', { bias: true }],
  ['no bias, packed f16 weights', { bias: false, f16w: true }],
  ['fp16 accumulation, bf16 storage', { bias: true, constants: { ACC_F16: true, STORAGE_PREC: 2 } }],
];

describe('reference linear variants are bit-identical to the 16 × 16 kernel', () => {
  it.each(modes)('%s', async (_name, mode) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    for (const [M, N, K] of cases) {
      const x = randn(rng, M * K);
      const wf = randn(rng, N * K, 1 / Math.sqrt(K));
      const w = mode.f16w ? packF16(wf) : wf;
      const b = randn(rng, N, 0.1);
      const constants = { ...mode.constants, ...(mode.f16w ? { W_F16: true } : {}) };
      const buf = (y: GPUBuffer) => ({
        x: h.upload(x),
        w: h.upload(w),
        b: mode.bias ? h.upload(b) : null,
        y,
        dummy: h.upload(new Float32Array(4)),
      });
      const outs = Array.from({ length: 6 }, () => h.poisoned(M * N));
      await h.run([
        linearTiled('tiled', buf(outs[0]), M, N, K, { constants }),
        linearBlocked('blocked', buf(outs[1]), M, N, K, { TX: 8, TY: 4 }, { constants }),
        linearBlocked('blocked', buf(outs[2]), M, N, K, { TX: 16, TY: 16 }, { constants }),
        linearRows('rows', buf(outs[3]), M, N, K, { WG: 64, NR: 8, KC: 32 }, { constants }),
        linearRows('rows', buf(outs[4]), M, N, K, { WG: 96, NR: 32, KC: 48 }, { constants }),
        linearPlain('plain', buf(outs[5]), M, N, K, { constants }),
      ]);
      const bits = await Promise.all(outs.map(async (o) => new Uint32Array((await h.read(o, M * N)).buffer)));
      const ref = bits[0];
      const nan = ref.findIndex((u) => (u & 0x7f800000) === 0x7f800000);
      expect(nan, `seed ${seed}: the 16 × 16 kernel left a non-finite at ${nan} (${M}×${N}×${K})`).toBe(-1);
      for (const [v, name] of [
        [1, 'blocked 16×32'],
        [2, 'blocked 64×64'],
        [3, 'rows 8/32'],
        [4, 'rows 32/48'],
        [5, 'plain'],
      ] as const) {
        const i = bits[v].findIndex((u, j) => u !== ref[j]);
        expect(i, `seed ${seed}: ${name} differs at ${i} of ${M}×${N}×${K}`).toBe(-1);
      }
    }
  });
});
