// The barrier-free kernels of CPU adapters (GemmPolicy.cpu) against their tiled forms, bit for bit. The GEMM
// core (shaders/common/gemm_plain.wgsl) against the tiled core: every epilogue (bias, no bias, GELU, both residual styles, QKV + rotary), whole
// and split-K, f32, fp16 accumulation with bf16 storage, packed-f16 weights and the misaligned-tile teaching
// fault, at sizes that are multiples of no tile and K both a multiple of BK and not (the tiled core's padding).
// Fresh random inputs per run (the seed is printed on failure; KERNEL_SEED=<seed> replays), outputs poisoned
// with NaN (and the split workspace too), so an output either kernel leaves unwritten fails the comparison. The
// reference attention kernels' PLAIN variants (scores, weighted values) likewise, whole forwards and decode rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packF16 } from '../engine/gpu-model';
import type { DispatchSpec } from '../gpu/program';
import { mulberry32, randn } from '../numeric/random';
import { attnScores, attnValues, softmaxCausal } from './attention';
import { type GemmOpts, qkvRotaryOps } from './fused-linear';
import { GEMM_CPU, GEMM_SMALL } from './gemm';
import { CPU_ADAPTER, UNKNOWN_ADAPTER } from './gemm-configs';
import { epilogueCase, type GemmMode, gemmModes } from './gemm-modes.testdata';
import { rotaryTables } from './rotary';
import { createHarness, freshSeed, type Harness } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

/** A mode runs on one tile configuration of the tiled core (both BK 8 and 16 are covered over the modes). */
const MODES: GemmMode[] = gemmModes({ f32: GEMM_CPU, acc: GEMM_SMALL, f16w: GEMM_CPU, fault: GEMM_CPU });

// (M, N, K): one row (a decode step), rows past a block of 4 and not a multiple of it, K below one BK step, K a
// multiple of BK 8 but not 16, N past a workgroup of 4-column groups.
const SHAPES: [number, number, number][] = [
  [1, 67, 515],
  [37, 300, 90],
  [5, 45, 13],
  [24, 90, 200],
];
// Each shape whole, and split in chunks of 64 (a multiple of both cores' BK; the last chunk is short).
const SPLITS = [undefined, 64] as const;

const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

/** Runs `make` under the tiled and the plain core; every output's bits must agree (and be finite). */
async function sameBits(
  seed: number,
  what: string,
  sizes: number[],
  make: (outs: GPUBuffer[], opts: GemmOpts) => DispatchSpec[],
  opts: GemmOpts,
) {
  const tiled = sizes.map((n) => h.poisoned(n));
  const plain = sizes.map((n) => h.poisoned(n));
  const tiledSpecs = make(tiled, { ...opts, policy: UNKNOWN_ADAPTER });
  const plainSpecs = make(plain, { ...opts, policy: CPU_ADAPTER });
  expect(plainSpecs.map((s) => s.kernel.name)).toEqual(
    tiledSpecs.map((s) =>
      s.kernel.name.endsWith('.reduce') ? s.kernel.name : s.kernel.name.replace(/(\.splitk)?$/, '.plain$1'),
    ),
  );
  await h.run([...tiledSpecs, ...plainSpecs]);
  for (const [i, n] of sizes.entries()) {
    const a = bits(await h.read(tiled[i], n));
    const b = bits(await h.read(plain[i], n));
    const bad = a.findIndex((u) => (u & 0x7f800000) === 0x7f800000);
    expect(bad, `seed ${seed}: ${what} output ${i}: the tiled core left a non-finite at ${bad}`).toBe(-1);
    const j = b.findIndex((u, k) => u !== a[k]);
    expect(j, `seed ${seed}: ${what} output ${i}: the plain core differs at ${j} of ${n}`).toBe(-1);
  }
}

describe('the barrier-free GEMM core gives the tiled core’s bits', () => {
  it.each(MODES.map((m) => [m.name, m] as const))('linear epilogues, %s', async (_name, mode) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    for (const [M, N, K] of SHAPES) {
      for (const kChunk of SPLITS) {
        const c = epilogueCase(h, rng, mode, [M, N, K], kChunk, true, packF16);
        const what = `${M}×${N}×${K} BK ${mode.tiles.BK}, ${kChunk ? `K per split ${kChunk}` : 'whole'}`;
        await sameBits(seed, what, c.sizes, c.ops, c.opts);
      }
    }
  });

  // (T, H, hd, r): an odd head dim (a padding column per segment), a wide head; whole and split.
  it.each([
    [37, 3, 15, 6, undefined],
    [1, 2, 40, 10, 32],
  ] as const)('QKV + rotary T=%i H=%i hd=%i r=%i, K per split %s', async (T, H, hd, r, kChunk) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const d = H * hd;
    const { cos, sin } = rotaryTables(T, r, 10000);
    const io = {
      x: h.upload(randn(rng, T * d)),
      w: h.upload(randn(rng, 3 * d * d, 1 / Math.sqrt(d))),
      b: h.upload(randn(rng, 3 * d, 0.1)),
      cos: h.upload(cos),
      sin: h.upload(sin),
      dummy: h.upload(new Float32Array(4)),
    };
    for (const mode of [MODES[1], MODES[3]]) {
      const opts: GemmOpts = {
        constants: { ...mode.tiles, ...mode.constants },
        ...(kChunk !== undefined ? { kChunk, workspace: (n: number) => h.poisoned(n) } : {}),
      };
      const n = H * T * hd;
      await sameBits(
        seed,
        `qkv ${mode.name}`,
        [n, n, n],
        ([q, k, v], o) => qkvRotaryOps('qkv', { ...io, q, k, v }, T, H, hd, r, o),
        opts,
      );
    }
  });
});

describe('the attention kernels’ barrier-free variants (PLAIN) give the tiled kernels’ bits', () => {
  // (H, T, hd, p0): a whole forward past one tile with hd off the tile, a decode row past two tiles of keys,
  // a few rows at positions 7.. with hd 40 (a tile and a half), rows of 151–153 keys.
  it.each([
    [3, 37, 15, 0],
    [2, 1, 24, 33],
    [2, 5, 40, 7],
    [1, 3, 8, 150], // rows past the softmax's 128 lanes
  ] as const)('H=%i T=%i hd=%i p0=%i', async (H, T, hd, p0) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const rows = p0 + T;
    const Tk = p0 + T;
    const q = h.upload(randn(rng, H * T * hd));
    const k = h.upload(randn(rng, H * rows * hd));
    const v = h.upload(randn(rng, H * rows * hd));
    const at = { p0, rows };
    const modes: Record<string, number | boolean>[] = [{}, { ACC_F16: true, STORAGE_PREC: 2 }];
    for (const constants of modes) {
      const [s1, s2] = [h.poisoned(H * T * Tk), h.poisoned(H * T * Tk)];
      const [p1, p2] = [h.poisoned(H * T * Tk), h.poisoned(H * T * Tk)];
      const [c1, c2] = [h.poisoned(T * H * hd), h.poisoned(T * H * hd)];
      const plain = { constants: { ...constants, PLAIN: true } };
      await h.run([
        attnScores('s', { q, k, s: s1 }, H, T, hd, { constants }, at),
        attnScores('s', { q, k, s: s2 }, H, T, hd, plain, at),
        // Both softmaxes and both value kernels read the same input (the tiled kernel's scores and probabilities).
        softmaxCausal('p', { s: s1, p: p1 }, H, T, { constants }, at),
        softmaxCausal('p', { s: s1, p: p2 }, H, T, plain, at),
        attnValues('c', { p: p1, v, ctx: c1 }, H, T, hd, { constants }, at),
        attnValues('c', { p: p1, v, ctx: c2 }, H, T, hd, plain, at),
      ]);
      for (const [what, a, b, n] of [
        ['scores', s1, s2, H * T * Tk],
        ['probabilities', p1, p2, H * T * Tk],
        ['values', c1, c2, T * H * hd],
      ] as const) {
        const x = bits(await h.read(a, n));
        const y = bits(await h.read(b, n));
        const bad = x.findIndex((u) => (u & 0x7f800000) === 0x7f800000);
        expect(bad, `seed ${seed}: tiled ${what} left a non-finite at ${bad}`).toBe(-1);
        const j = y.findIndex((u, i) => u !== x[i]);
        expect(j, `seed ${seed}: ${what} ${JSON.stringify(constants)}: PLAIN differs at ${j} of ${n}`).toBe(
          -1,
        );
      }
    }
  });
});
