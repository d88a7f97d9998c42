// The fused flash-attention kernel against the UNFUSED fp64 oracles run in sequence (scores → causal softmax
// → values), on fresh random inputs (seed printed; replay with KERNEL_SEED=<seed>), NaN-poisoned outputs with
// a poisoned guard tail past ctx (it must stay NaN: no write out of bounds), T not a multiple of the tiles
// and hd not a multiple of anything, up to the widest head (256: two passes over the output dims). Then
// bit-identical results for any query tile BQ (the determinism check of the analysis relies on it) and for
// any number of passes, the precision modes and the two fault switches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roundStorage, roundStorageArray } from '../numeric/precision';
import { mulberry32, randn } from '../numeric/random';
import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from './cpu/attention';
import { flashTol } from './custom/tolerances';
import {
  FLASH_BK,
  FLASH_KEY_CHUNK,
  FLASH_MAX_HEAD_DIM,
  flashAttention,
  flashPasses,
  flashTiles,
  flashWorkgroupBytes,
  headDimProblem,
} from './flash-attention';
import { precisionConstants } from './precision';
import { compare, createHarness, freshSeed, type Harness } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

const GUARD = 64; // poisoned f32 after ctx that the kernel must not touch

interface Inputs {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
}

function randomInputs(seed: number, H: number, T: number, hd: number): Inputs {
  const rng = mulberry32(seed);
  return { q: randn(rng, H * T * hd), k: randn(rng, H * T * hd), v: randn(rng, H * T * hd) };
}

/** Runs the kernel once; returns ctx [T, H*hd] (the guard tail is checked here). */
async function runFlash(
  x: Inputs,
  H: number,
  T: number,
  hd: number,
  constants: Record<string, number | boolean> = {},
): Promise<Float32Array> {
  const n = T * H * hd;
  const ctx = h.poisoned(n + GUARD);
  await h.run([
    flashAttention('attn', { q: h.upload(x.q), k: h.upload(x.k), v: h.upload(x.v), ctx }, H, T, hd, {
      constants,
    }),
  ]);
  const all = await h.read(ctx, n + GUARD);
  expect(all.subarray(n).every(Number.isNaN), 'ctx guard tail was written').toBe(true);
  return all.slice(0, n);
}

/** The unfused fp64 chain, and Σ_j p_ij |v_je| (the scale of every error term) with the same layout. */
function oracle(x: Inputs, H: number, T: number, hd: number) {
  const s = attentionScoresF64(x.q, x.k, H, T, hd);
  const p = softmaxCausalF64(s, H, T);
  return {
    s,
    ctx: attentionValuesF64(p, x.v, H, T, hd),
    pAbsV: attentionValuesF64(p, Float64Array.from(x.v, Math.abs), H, T, hd),
  };
}

/** The f32 kernel's per-element bound against the exact result (derived at flashTol). */
function f32Bound(x: Inputs, o: ReturnType<typeof oracle>, H: number, T: number, hd: number, BK = FLASH_BK) {
  return flashTol(x.q, x.k, o.s, o.pAbsV, H, T, hd, BK);
}

function relL2(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    num += (a[i] - b[i]) ** 2;
    den += b[i] ** 2;
  }
  return Math.sqrt(num / den);
}

function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]));
  return m;
}

/** Distance between adjacent f16 values at |x| (2^-24 in the subnormal range). */
function ulpF16(x: number): number {
  const a = Math.abs(x);
  if (a < 2 ** -14) return 2 ** -24;
  return 2 ** (Math.floor(Math.log2(a)) - 10);
}

const grid: Array<[number, number, number]> = [];
for (const T of [1, 7, 24, 129, 200])
  for (const H of [1, 3]) for (const hd of [24, 30, 64]) grid.push([T, H, hd]);

describe('fused flash attention vs the unfused fp64 chain', () => {
  it.each(grid)('T=%i H=%i hd=%i', async (T, H, hd) => {
    const seed = freshSeed();
    const x = randomInputs(seed, H, T, hd);
    const got = await runFlash(x, H, T, hd);
    const o = oracle(x, H, T, hd);
    const r = compare(`flash T=${T} H=${H} hd=${hd}`, got, o.ctx, f32Bound(x, o, H, T, hd), seed);
    const errVsMaxV = r.maxAbs / maxAbs(x.v);
    console.log(`${r.report.split('\n')[0]}; max|err|/max|v| ${errVsMaxV.toExponential(2)}`);
    expect(r.ok, r.report).toBe(true);
  });

  it.each([
    [40, 2, FLASH_MAX_HEAD_DIM, {}],
    [27, 2, 201, {}],
    [45, 1, 160, { BQ: 13 }],
    [40, 2, 128, {}],
    [70, 2, 100, {}],
    [90, 1, 72, {}],
    [129, 3, 30, { BQ: 8, BK: 16 }],
    [200, 1, 64, { BQ: 8, BK: 16 }],
    [200, 2, 64, { BQ: 64, BK: 8 }],
    [77, 2, 24, { BQ: 4, BK: 8 }],
    [150, 2, 30, { BQ: 13, BK: 24 }],
    [150, 1, 64, { PREFETCH: false }],
  ] as Array<[number, number, number, Record<string, number | boolean>]>)(
    'T=%i H=%i hd=%i (max head_dim / other tiles %o)',
    async (T, H, hd, tiles) => {
      const seed = freshSeed();
      const x = randomInputs(seed, H, T, hd);
      const got = await runFlash(x, H, T, hd, tiles);
      const o = oracle(x, H, T, hd);
      const BK = Number(tiles.BK ?? flashTiles(hd).BK);
      const r = compare(`flash T=${T} H=${H} hd=${hd}`, got, o.ctx, f32Bound(x, o, H, T, hd, BK), seed);
      console.log(r.report.split('\n')[0]);
      expect(r.ok, r.report).toBe(true);
    },
  );

  it('refuses head_dim above the maximum and tiles past the default limits', () => {
    const buf = {} as GPUBuffer;
    const b = { q: buf, k: buf, v: buf, ctx: buf };
    for (const bad of [0, -3, 2.5, Number.NaN, FLASH_MAX_HEAD_DIM + 1]) {
      expect(() => flashAttention('a', b, 1, 8, bad)).toThrow(/head_dim/);
      expect(headDimProblem(bad)).toMatch(/^head_dim .* is not supported/);
    }
    expect(headDimProblem(FLASH_MAX_HEAD_DIM)).toBeNull();
    expect(headDimProblem(1)).toBeNull();
    // Past 128 dims the accumulators of a pass and a q row in registers no longer fit: refused, not clamped.
    expect(flashPasses(128)).toBe(1);
    expect(flashPasses(129)).toBe(2);
    expect(() => flashAttention('a', b, 1, 8, 256, { constants: { NPASS: 1 } })).toThrow(/NPASS=1/);
    expect(() => flashAttention('a', b, 1, 8, 200, { constants: { Q_REGS: true } })).toThrow(/Q_REGS/);
    expect(() => flashAttention('a', b, 1, 8, 256, { constants: { BK: 16 } })).toThrow(/B$/);
    // BQ·BK/8 threads: 64 rows × 4 threads per row is 256, 65 × 4 is too many.
    expect(() => flashAttention('a', b, 1, 8, 16, { constants: { BQ: 64, BK: 32 } })).not.toThrow();
    expect(() => flashAttention('a', b, 1, 8, 16, { constants: { BQ: 65, BK: 32 } })).toThrow(/invocations/);
    // Workgroup memory grows with head_dim: K + V tiles of 32 keys fit at hd 64 (16 KiB), not at hd 68.
    expect(flashWorkgroupBytes(32, 32, 64)).toBe(16384);
    expect(() => flashAttention('a', b, 1, 8, 68, { constants: { BQ: 32, BK: 32 } })).toThrow(/B$/);
    // The merge of the partial row states needs BQ·(hd/4 + 1) vec4s: 64 rows at hd 64 do not fit.
    expect(() => flashAttention('a', b, 1, 8, 64, { constants: { BQ: 64, BK: 16 } })).toThrow(/B$/);
    expect(() => flashAttention('a', b, 1, 8, 64, { constants: { BQ: 64, BK: 8 } })).not.toThrow();
    expect(() => flashAttention('a', b, 1, 8, 64, { constants: { BQ: 16, BK: 12 } })).toThrow(/BK=12/);
    expect(() => flashAttention('a', b, 1, 8, 64, { constants: { MAX_HD: 32 } })).toThrow(/MAX_HD/);
  });

  it('default tiles fit the default limits for every head_dim, also with the query tile of 8', () => {
    const buf = {} as GPUBuffer;
    const b = { q: buf, k: buf, v: buf, ctx: buf };
    for (let hd = 1; hd <= FLASH_MAX_HEAD_DIM; hd++) {
      expect(() => flashAttention('a', b, 2, 100, hd)).not.toThrow();
      expect(() => flashAttention('a', b, 2, 100, hd, { constants: { BQ: 8 } })).not.toThrow();
    }
    expect(flashTiles(64).BK).toBe(FLASH_BK);
  });
});

describe('flash attention is bit-identical for any query tile', () => {
  // Each row's arithmetic (its key chunks, their order, the merge order) depends on the row and BK only: a
  // different BQ must not change a single bit (the analysis re-runs with BQ = 8 to expose races).
  it.each([
    [200, 2, 30, {}],
    [129, 3, 64, {}],
    [77, 2, 128, {}],
    [37, 1, 256, {}],
    [150, 2, 24, { BK: 16 }],
    [129, 2, 64, { ACC_F16: true, STORAGE_PREC: 1 }],
  ] as Array<[number, number, number, Record<string, number | boolean>]>)(
    'T=%i H=%i hd=%i %o',
    async (T, H, hd, extra) => {
      const seed = freshSeed();
      const x = randomInputs(seed, H, T, hd);
      const base = await runFlash(x, H, T, hd, extra);
      const others: Record<string, number | boolean>[] = [
        { BQ: 8 },
        { BQ: 16 },
        { BQ: 5 },
        { PREFETCH: false },
      ];
      for (const other of others) {
        const got = await runFlash(x, H, T, hd, { ...extra, ...other });
        const first = got.findIndex((g, i) => !Object.is(g, base[i]));
        expect(first, `seed ${seed} ${JSON.stringify(other)}: first differing element ${first}`).toBe(-1);
      }
    },
  );
});

describe('flash attention is bit-identical for any number of passes over the output dims', () => {
  // A pass recomputes the row's scores and softmax with the same arithmetic, and q read from memory is the same
  // q: more passes (or q out of registers) must not change a bit, which also pins the two-pass path of wide heads
  // to the one-pass arithmetic.
  it.each([
    [70, 2, 30, [{ NPASS: 2 }, { NPASS: 3, Q_REGS: false }]],
    [41, 1, 128, [{ NPASS: 2 }, { NPASS: 4, Q_REGS: false }]],
    [37, 1, 256, [{ NPASS: 3 }, { NPASS: 4 }]],
  ] as Array<[number, number, number, Record<string, number | boolean>[]]>)(
    'T=%i H=%i hd=%i',
    async (T, H, hd, others) => {
      const seed = freshSeed();
      const x = randomInputs(seed, H, T, hd);
      const base = await runFlash(x, H, T, hd);
      for (const other of others) {
        const got = await runFlash(x, H, T, hd, other);
        const first = got.findIndex((g, i) => !Object.is(g, base[i]));
        expect(first, `seed ${seed} ${JSON.stringify(other)}: first differing element ${first}`).toBe(-1);
      }
    },
  );
});

describe('flash attention precision modes', () => {
  const [T, H, hd] = [129, 3, 30];

  it('fp16 storage: the fp64 result rounded to f16, within 1 f16 ulp', async () => {
    const seed = freshSeed();
    const raw = randomInputs(seed, H, T, hd);
    // Inputs as an fp16 model stores them.
    const f16 = (a: Float32Array) => Float32Array.from(roundStorageArray('fp16', a));
    const x = { q: f16(raw.q), k: f16(raw.k), v: f16(raw.v) };
    const got = await runFlash(x, H, T, hd, precisionConstants('fp16'));
    const o = oracle(x, H, T, hd);
    const rounded = Float64Array.from(o.ctx, (v) => roundStorage('fp16', v));
    expect(
      got.every((g) => roundStorage('fp16', g) === g),
      'ctx values are not all f16',
    ).toBe(true);
    // got = round16(ref + δ) with |δ| ≤ B (the f32 bound): |got − round16(ref)| ≤ ulp + B. B is far below
    // half an ulp except for values within ~1e-4 of zero, so in practice this is "within 1 f16 ulp".
    const B = f32Bound(x, o, H, T, hd);
    const r = compare('flash fp16', got, rounded, (i) => ulpF16(Math.abs(o.ctx[i]) + B(i)) + B(i), seed);
    let off = 0;
    let worstUlps = 0;
    got.forEach((g, i) => {
      off += g === rounded[i] ? 0 : 1;
      worstUlps = Math.max(
        worstUlps,
        Math.abs(g - rounded[i]) / ulpF16(Math.min(Math.abs(g), Math.abs(rounded[i]))),
      );
    });
    console.log(
      `${r.report.split('\n')[0]}; ${off} of ${got.length} off round16(oracle), worst ${worstUlps} ulp`,
    );
    expect(r.ok, r.report).toBe(true);
  });

  it('fp16 accumulation: differs from fp32 by more than fp32 noise, less than 1e-2', async () => {
    const seed = freshSeed();
    const raw = randomInputs(seed, H, 200, hd);
    const f16 = (a: Float32Array) => Float32Array.from(roundStorageArray('fp16', a));
    const x = { q: f16(raw.q), k: f16(raw.k), v: f16(raw.v) };
    const f32 = await runFlash(x, H, 200, hd, precisionConstants('fp32'));
    const st16 = await runFlash(x, H, 200, hd, precisionConstants('fp16'));
    const acc16 = await runFlash(x, H, 200, hd, precisionConstants('fp16acc'));
    const exact = oracle(x, H, 200, hd).ctx;
    const e32 = relL2(f32, exact);
    const eSt = relL2(st16, f32);
    const eAcc = relL2(acc16, f32);
    console.log(
      `seed ${seed}: rel L2 fp32 vs fp64 ${e32.toExponential(2)}, ` +
        `fp16 storage vs fp32 ${eSt.toExponential(2)}, fp16acc vs fp32 ${eAcc.toExponential(2)}`,
    );
    expect(e32).toBeLessThan(1e-6);
    expect(eAcc).toBeGreaterThan(100 * e32);
    expect(eAcc).toBeGreaterThan(eSt); // the accumulators add to the storage rounding
    expect(eAcc).toBeLessThan(1e-2);
  });
});

describe('flash attention fault switches', () => {
  const [H, hd] = [3, 30];

  it.each([7, FLASH_KEY_CHUNK])('FAULT_NO_RESCALE is exact with one key chunk (T=%i <= 8)', async (T) => {
    const seed = freshSeed();
    const x = randomInputs(seed, H, T, hd);
    const good = await runFlash(x, H, T, hd);
    const bad = await runFlash(x, H, T, hd, { FAULT_NO_RESCALE: true });
    // The only rescale that could happen is before the first chunk, when l and o are still 0.
    expect(Array.from(bad), `seed ${seed}`).toEqual(Array.from(good));
    const o = oracle(x, H, T, hd);
    const r = compare('flash FAULT_NO_RESCALE, one tile', bad, o.ctx, f32Bound(x, o, H, T, hd), seed);
    expect(r.ok, r.report).toBe(true);
  });

  // T=16: two chunks, taken by two threads of the row, so the skipped rescale is the merge's; T=200: both.
  it.each([
    [16, 1e-3],
    [200, 1e-2],
  ])('FAULT_NO_RESCALE is clearly wrong at T=%i when later keys score higher', async (T, wrong) => {
    const seed = freshSeed();
    const x = randomInputs(seed, H, T, hd);
    // A positive q component against a ramp on the same k component: the score grows ~0.18 per key chunk.
    for (let r = 0; r < H * T; r++) {
      x.q[r * hd] += 3;
      x.k[r * hd] += 0.04 * (r % T);
    }
    const o = oracle(x, H, T, hd);
    const good = relL2(await runFlash(x, H, T, hd), o.ctx);
    const bad = relL2(await runFlash(x, H, T, hd, { FAULT_NO_RESCALE: true }), o.ctx);
    console.log(
      `seed ${seed}: rel L2 vs fp64 without fault ${good.toExponential(2)}, with ${bad.toExponential(2)}`,
    );
    expect(good).toBeLessThan(1e-5);
    expect(bad).toBeGreaterThan(wrong);
  });

  it('FAULT_NO_BARRIER compiles and runs (a race: wrongness not asserted)', async () => {
    const T = 129;
    const seed = freshSeed();
    const x = randomInputs(seed, H, T, hd);
    const got = await runFlash(x, H, T, hd, { FAULT_NO_BARRIER: true });
    // Stale tile data is still finite data, so every element is written and finite either way.
    expect(got.every(Number.isFinite)).toBe(true);
    console.log(
      `seed ${seed}: FAULT_NO_BARRIER rel L2 vs fp64 ${relL2(got, oracle(x, H, T, hd).ctx).toExponential(2)}`,
    );
  });
});
