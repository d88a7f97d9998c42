// The fused linear kernels (shared GEMM core + epilogues) against the UNFUSED fp64 oracles run in sequence
// (linearF64 -> geluF64 / add3F64 / splitHeadsRotaryF64), on fresh random inputs (the seed is printed on
// failure; KERNEL_SEED=<seed> replays), NaN-poisoned outputs, and sizes that are multiples of no tile
// (blocks 32/64/128, BK 8/16): M in {1, 24, 129} (three tile configs by M), (N, K) in {(300, 90), (200, 90),
// (90, 200), (270, 90)}, and M=67, N=1031, K=515. Tolerances are derived in the comments; `worst` prints
// the largest err/tol ratio seen per kernel at the end. Split-K ('split-K' below): every epilogue and precision
// through the partial GEMM + reduction, K partitions with a short last split, NaN-poisoned workspace; the
// K partition's independence of M (a row's bits do not depend on how many rows run); the policy's choices.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roundStorage } from '../numeric/precision';
import { mulberry32, randn } from '../numeric/random';
import { geluF64 } from './cpu/gelu';
import { linearF64 } from './cpu/linear';
import { add3F64, addF64 } from './cpu/residual';
import { splitHeadsRotaryF64 } from './cpu/rotary';
import { linearGeluTol, linearResidualTol, linearTol, qkvRotaryTol } from './custom/tolerances';
import {
  gemmLaunch,
  linearBias,
  linearBiasOps,
  linearGelu,
  linearGeluOps,
  linearResidual,
  linearResidualOps,
  qkvRotary,
  qkvRotaryOps,
} from './fused-linear';
import {
  GEMM_CPU,
  GEMM_DECODE,
  GEMM_DEFAULT,
  GEMM_MEDIUM,
  GEMM_SMALL,
  type GemmTiles,
  gemmTilesFor,
  gemmTilesProblem,
  TUNE_CONFIGS,
  tilesName,
} from './gemm';
import {
  CAP_WIDE_N,
  CPU_ADAPTER,
  cappedChunk,
  chooseGemm,
  chunkFor,
  type GemmPolicy,
  gemmPolicyFor,
  groupMFor,
  HOPPER_POLICY,
  HOPPER_TABLE,
  heuristicChunk,
  K_CHUNK_GRANULE,
  UNKNOWN_ADAPTER,
} from './gemm-configs';
import { rotaryTables } from './rotary';
import { compare, createHarness, dotBound, freshSeed, type Harness } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => {
  h?.destroy();
  const lines = Object.entries(worst).map(([k, v]) => `  ${k}: ${v.toFixed(3)}`);
  console.log(`worst err/tol per check:\n${lines.join('\n')}`);
});

const worst: Record<string, number> = {};

function check(
  what: string,
  got: Float32Array,
  ref: ArrayLike<number>,
  tol: number | ((i: number) => number),
  seed: number,
) {
  const r = compare(what, got, ref, tol, seed);
  const key = what.startsWith('tiles') ? what.replace(/ .*/, '') : what.replace(/ [qkv]$/, '');
  worst[key] = Math.max(worst[key] ?? 0, r.maxRatio);
  expect(r.ok, r.report).toBe(true);
  return r;
}

/** ||got − ref||₂ / ||ref||₂. */
function relL2(got: ArrayLike<number>, ref: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < ref.length; i++) {
    num += (got[i] - ref[i]) ** 2;
    den += ref[i] ** 2;
  }
  return Math.sqrt(num / den);
}

/** One ulp of |v| in fp16 (subnormal spacing 2^-24 below 2^-14) or bf16. */
function ulp(prec: 'fp16' | 'bf16', v: number): number {
  const a = Math.abs(v);
  if (prec === 'fp16') return a < 2 ** -14 ? 2 ** -24 : 2 ** (Math.floor(Math.log2(a)) - 10);
  return a < 2 ** -126 ? 2 ** -133 : 2 ** (Math.floor(Math.log2(a)) - 7);
}

/**
 * Storage rounding check: got = st(y32) with |y32 − ref| <= E, so |got − round(ref)| <= |st(y32) − y32| + E +
 * |ref − round(ref)| <= ulp(|ref| + E) + E: within one ulp of the rounded oracle, plus the f32 error.
 */
function storageTol(prec: 'fp16' | 'bf16', ref: ArrayLike<number>, e: (i: number) => number) {
  return (i: number) => ulp(prec, Math.abs(ref[i]) + e(i)) + e(i);
}

const abs32 = (a: Float32Array) => a.map(Math.abs);

interface LinearCase {
  x: Float32Array; // [M, K]
  w: Float32Array; // [N, K]
  b: Float32Array; // [N]
  z: Float64Array; // x·W^T + b, fp64 [M, N]
  absZ: Float64Array; // |x|·|W|^T + |b| [M, N]
}

function linearCase(rng: () => number, M: number, N: number, K: number, round?: 'fp16'): LinearCase {
  let x = randn(rng, M * K);
  let w = randn(rng, N * K, 1 / Math.sqrt(K));
  let b = randn(rng, N, 0.5);
  if (round) [x, w, b] = [x, w, b].map((a) => a.map((v) => roundStorage(round, v)));
  return { x, w, b, z: linearF64(x, M, K, w, b, N), absZ: linearF64(abs32(x), M, K, abs32(w), abs32(b), N) };
}

interface QkvCase {
  x: Float32Array; // [T, d]
  w: Float32Array; // [3d, d]
  b: Float32Array; // [3d]
  cos: Float32Array; // [T, r/2]
  sin: Float32Array; // [T, r/2]
  ref: { q: Float64Array; k: Float64Array; v: Float64Array }; // [H, T, hd] each
  /** fp32 error bound per output element, [H, T, hd] per q/k/v. */
  err: { q: Float64Array; k: Float64Array; v: Float64Array };
}

function qkvCase(rng: () => number, T: number, H: number, hd: number, r: number, round?: 'fp16'): QkvCase {
  const d = H * hd;
  const c = linearCase(rng, T, 3 * d, d, round);
  const { cos, sin } = rotaryTables(T, r, 10000);
  const ref = splitHeadsRotaryF64(c.z, T, H, hd, r, 10000);
  // Split (no rotation) the |x||W|^T + |b| sums to the output layout, then per output the bound of
  // qkvRotaryTol: E = γ_{K+2}·A, a rotated element E0 + E1 + 4u(A0 + A1).
  const a = splitHeadsRotaryF64(c.absZ, T, H, hd, 0, 10000);
  const bound = (arr: Float64Array, rotated: boolean) => qkvRotaryTol(arr, d, hd, r, rotated);
  return {
    x: c.x,
    w: c.w,
    b: c.b,
    cos,
    sin,
    ref,
    err: { q: bound(a.q, true), k: bound(a.k, true), v: bound(a.v, false) },
  };
}

async function runQkv(c: QkvCase, T: number, H: number, hd: number, r: number, constants = {}) {
  const n = H * T * hd;
  const [q, k, v] = [h.poisoned(n), h.poisoned(n), h.poisoned(n)];
  const bufs = {
    x: h.upload(c.x),
    w: h.upload(c.w),
    b: h.upload(c.b),
    cos: h.upload(c.cos),
    sin: h.upload(c.sin),
  };
  const dummy = h.upload(new Float32Array(4));
  await h.run([qkvRotary('qkv', { ...bufs, q, k, v, dummy }, T, H, hd, r, { constants })]);
  return { q: await h.read(q, n), k: await h.read(k, n), v: await h.read(v, n) };
}

const Ms = [1, 24, 129];
const SHAPES = [
  [300, 90],
  [200, 90],
  [90, 200],
  [270, 90],
];
const CASES = [...Ms.flatMap((M) => SHAPES.map(([N, K]) => [M, N, K])), [67, 1031, 515]].map(
  ([M, N, K]) => [M, N, K, tilesLabel(M)] as const,
);

/**
 * Tiles per case: the launcher's own choice for M = 1 (GEMM_DECODE at every size here), GEMM_MEDIUM forced
 * for M = 24 and GEMM_DEFAULT for M >= 67 (the launcher picks those for larger grids than these), so every
 * epilogue runs on each of the three; the other configurations are checked in 'every tile configuration'.
 */
function tilesOf(M: number): GemmTiles | null {
  return M === 1 ? null : M === 24 ? GEMM_MEDIUM : GEMM_DEFAULT;
}
function tilesLabel(M: number): string {
  const t = tilesOf(M);
  return t ? tilesName(t) : 'auto';
}
function tileOpts(M: number, more: Record<string, number | boolean> = {}) {
  return { constants: { ...tilesOf(M), ...more } };
}

describe('fused linear kernels vs the unfused fp64 oracles', () => {
  it.each(CASES)('linearBias M=%i N=%i K=%i, tiles %s', async (M, N, K) => {
    const seed = freshSeed();
    const c = linearCase(mulberry32(seed), M, N, K);
    const y = h.poisoned(M * N);
    const dummy = h.upload(new Float32Array(4));
    await h.run([
      linearBias(
        'lin',
        { x: h.upload(c.x), w: h.upload(c.w), b: h.upload(c.b), y, dummy },
        M,
        N,
        K,
        tileOpts(M),
      ),
    ]);
    // K products and the bias summed in some order (fused multiply-adds only remove roundings):
    // |err| <= γ_{K+1} Σ|x_k w_k| + |b|; linearTol's γ_{K+2} leaves one rounding to spare.
    check('linearBias', await h.read(y, M * N), c.z, linearTol(K, c.absZ), seed);
  });

  it('linearBias without bias ignores the bias binding (the LM head)', async () => {
    const seed = freshSeed();
    const [M, N, K] = [24, 300, 90];
    const c = linearCase(mulberry32(seed), M, N, K);
    const y = h.poisoned(M * N);
    const dummy = h.upload(new Float32Array(N).fill(1000));
    await h.run([linearBias('head', { x: h.upload(c.x), w: h.upload(c.w), b: null, y, dummy }, M, N, K)]);
    const absRef = linearF64(abs32(c.x), M, K, abs32(c.w), null, N);
    const ref = linearF64(c.x, M, K, c.w, null, N);
    check(
      'linearBias(no bias)',
      await h.read(y, M * N),
      ref,
      (i) => dotBound(K + 1, absRef[i]) + 1e-30,
      seed,
    );
  });

  it.each(CASES)('linearGelu M=%i N=%i K=%i, tiles %s', async (M, N, K) => {
    const seed = freshSeed();
    const c = linearCase(mulberry32(seed), M, N, K);
    const y = h.poisoned(M * N);
    const dummy = h.upload(new Float32Array(4));
    await h.run([
      linearGelu(
        'up',
        { x: h.upload(c.x), w: h.upload(c.w), b: h.upload(c.b), y, dummy },
        M,
        N,
        K,
        tileOpts(M),
      ),
    ]);
    const ref = geluF64(c.z);
    // z carries E = γ_{K+2} Σ|xw| + |b|; |gelu'| <= 1.13, so that becomes <= 1.13 E; gelu_exact itself
    // (reference.test.ts) adds (4e-7 + (16 + z²) u)|z| (linearGeluTol).
    check('linearGelu', await h.read(y, M * N), ref, linearGeluTol(K, c.z, c.absZ), seed);
  });

  it.each(
    CASES.flatMap(([M, N, K, t]) => [
      [M, N, K, t, 2] as const,
      ...(M === 24 ? [[M, N, K, t, 1] as const] : []),
    ]),
  )('linearResidual M=%i N=%i K=%i, tiles %s, %i residuals', async (M, N, K, _t, residuals) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const c = linearCase(rng, M, N, K);
    const r1 = randn(rng, M * N); // hidden_states
    const r2 = randn(rng, M * N); // attn_output
    const y = h.poisoned(M * N);
    const dummy = h.upload(new Float32Array(M * N).fill(1000));
    const bufs = { x: h.upload(c.x), w: h.upload(c.w), b: h.upload(c.b), r1: h.upload(r1), y, dummy };
    const r2b = residuals === 2 ? h.upload(r2) : null;
    await h.run([linearResidual('out', { ...bufs, r2: r2b }, M, N, K, tileOpts(M))]);
    // HF order: mlp_output + attn_output + hidden_states (add3F64(x, attn, mlp)), or attn + x.
    const ref = residuals === 2 ? add3F64(r1, r2, c.z) : addF64(c.z, r1);
    // One sum of K + 2 (or K + 3) terms in some order: γ_{K+3} (Σ|xw| + |b| + |r1| + |r2|)
    // (linearResidualTol).
    const tol = linearResidualTol(K, c.absZ, r1, residuals === 2 ? r2 : null);
    check('linearResidual', await h.read(y, M * N), ref, tol, seed);
  });

  // qkv + rotary: hd not a multiple of any tile, odd hd (padding column), r = hd.
  const QKV = [
    [1, 3, 30, 8],
    [24, 3, 30, 8],
    [129, 3, 30, 8],
    [24, 4, 24, 6],
    [67, 2, 64, 16],
    [24, 3, 32, 32],
    [24, 3, 15, 6],
    [24, 2, 20, 0],
    // Pythia's other head dims (96 with full rotary, as RedPajama-INCITE) and a wide odd one
    [23, 2, 80, 20],
    [17, 2, 96, 96],
    [13, 1, 256, 64],
    [11, 2, 201, 50],
  ];

  it.each(QKV.map(([T, H, hd, r]) => [T, H, hd, r, tilesLabel(T)] as const))(
    'qkvRotary T=%i H=%i hd=%i r=%i, tiles %s',
    async (T, H, hd, r) => {
      const seed = freshSeed();
      const c = qkvCase(mulberry32(seed), T, H, hd, r);
      const got = await runQkv(c, T, H, hd, r, tileOpts(T).constants);
      for (const s of ['q', 'k', 'v'] as const) {
        check(`qkvRotary ${s}`, got[s], c.ref[s], (i) => c.err[s][i], seed);
      }
    },
  );

  it('every tile configuration the device allows gives the same bits, within the oracle tolerance', async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const [M, N, K] = [67, 131, 45];
    const c = linearCase(rng, M, N, K);
    const [T, H, hd, r] = [37, 3, 30, 8];
    const qc = qkvCase(rng, T, H, hd, r);
    const dummy = h.upload(new Float32Array(4));
    const [xb, wb, bb] = [h.upload(c.x), h.upload(c.w), h.upload(c.b)];
    // The default-limit tiles, and the measured table's tiles of a raised limit where this device grants it
    // (SwiftShader: 32 KiB of workgroup memory, 256 threads; the others are slow here and share the code).
    const raised = Object.values(HOPPER_TABLE.tiles).filter((t) => gemmTilesProblem(t) !== null);
    const configs = [
      ...TUNE_CONFIGS.filter((t) => gemmTilesProblem(t) === null),
      ...raised.filter((t, i) => raised.findIndex((u) => tilesName(u) === tilesName(t)) === i),
    ].filter((t) => gemmTilesProblem(t, h.ctx.device.limits) === null);
    expect(configs.length).toBeGreaterThan(5);
    // Each output sums k ascending with one accumulator whatever the tiles: the same bits from every one.
    const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);
    const same = (what: string, got: Float32Array, first: Float32Array) => {
      const i = bits(got).findIndex((v, j) => v !== bits(first)[j]);
      expect(i, `${what} (seed ${seed}): element ${i}: ${got[i]} vs ${first[i]} from the first tiles`).toBe(
        -1,
      );
    };
    let firstY: Float32Array | null = null;
    const firstQkv: Record<string, Float32Array> = {};
    const qkvSeen = new Set<string>();
    for (const t of configs) {
      const y = h.poisoned(M * N);
      await h.run([linearBias('lin', { x: xb, w: wb, b: bb, y, dummy }, M, N, K, { constants: { ...t } })]);
      const got = await h.read(y, M * N);
      check(`tiles ${tilesName(t)}`, got, c.z, linearTol(K, c.absZ), seed);
      firstY ??= got;
      same(`tiles ${tilesName(t)}`, got, firstY);
      // The rotary pairing depends on the column mapping only (BN, TN): one buffering/staging variant each.
      const key = `${t.BM}x${t.BN}x${t.BK} ${t.TM}x${t.TN}`;
      if (qkvSeen.has(key)) continue;
      qkvSeen.add(key);
      const q = await runQkv(qc, T, H, hd, r, { ...t });
      for (const s of ['q', 'k', 'v'] as const) {
        check(`tiles(qkv) ${s} ${tilesName(t)}`, q[s], qc.ref[s], (i) => qc.err[s][i], seed);
        firstQkv[s] ??= q[s];
        same(`tiles(qkv) ${s} ${tilesName(t)}`, q[s], firstQkv[s]);
      }
    }
    // The workgroup order (GEMM_GROUP_M row blocks per column block, the last group short: 67 rows are 3 blocks of
    // 32 or 2 of 64) moves no output: the same bits.
    const grouped = [
      { t: configs.find((u) => u.BM === 32), G: 2 },
      { t: configs.find((u) => u.BM === 64), G: 3 },
    ];
    for (const { t, G } of grouped) {
      if (!t) throw new Error('no 32- or 64-row tiles to order');
      const y = h.poisoned(M * N);
      const constants = { ...t, GEMM_GROUP_M: G };
      await h.run([linearBias('lin', { x: xb, w: wb, b: bb, y, dummy }, M, N, K, { constants })]);
      same(`tiles ${tilesName(t)} GEMM_GROUP_M ${G}`, await h.read(y, M * N), firstY as Float32Array);
    }
  });

  it('the launcher picks tiles by grid size (as tuned on an H200)', () => {
    expect(gemmTilesFor(2048, 2048)).toBe(GEMM_DEFAULT);
    expect(gemmTilesFor(128, 50304)).toBe(GEMM_DEFAULT);
    expect(gemmTilesFor(128, 2048)).toBe(GEMM_SMALL);
    expect(gemmTilesFor(512, 2048)).toBe(GEMM_MEDIUM);
    expect(gemmTilesFor(16, 50304)).toBe(GEMM_SMALL);
    expect(gemmTilesFor(1, 50304)).toBe(GEMM_DECODE);
    for (const t of [GEMM_DEFAULT, GEMM_MEDIUM, GEMM_SMALL, GEMM_DECODE])
      expect(gemmTilesProblem(t), tilesName(t)).toBeNull();
  });
});

describe('precision emulation', () => {
  const FP16 = { STORAGE_PREC: 1, ACC_F16: false };

  it.each([
    [24, 300, 90],
    [67, 1031, 515],
  ])(
    'fp16 / bf16 storage: linear kernels within one ulp of the rounded oracle, M=%i N=%i K=%i',
    async (M, N, K) => {
      const seed = freshSeed();
      const rng = mulberry32(seed);
      const c = linearCase(rng, M, N, K, 'fp16');
      const [r1, r2] = [randn(rng, M * N), randn(rng, M * N)].map((a) =>
        a.map((v) => roundStorage('fp16', v)),
      );
      const dummy = h.upload(new Float32Array(4));
      const bufs = { x: h.upload(c.x), w: h.upload(c.w), b: h.upload(c.b), dummy };
      const [y1, y2, y3, y4] = [0, 1, 2, 3].map(() => h.poisoned(M * N));
      await h.run([
        linearBias('lin', { ...bufs, y: y1 }, M, N, K, { constants: FP16 }),
        linearGelu('up', { ...bufs, y: y2 }, M, N, K, { constants: FP16 }),
        linearResidual('out', { ...bufs, r1: h.upload(r1), r2: h.upload(r2), y: y3 }, M, N, K, {
          constants: FP16,
        }),
        linearBias('lin', { ...bufs, y: y4 }, M, N, K, { constants: { STORAGE_PREC: 2, ACC_F16: false } }),
      ]);
      const E = (i: number) => dotBound(K + 2, c.absZ[i]);
      const round = (p: 'fp16' | 'bf16', a: ArrayLike<number>) =>
        Float64Array.from(a, (v) => roundStorage(p, v));
      check('fp16 linearBias', await h.read(y1, M * N), round('fp16', c.z), storageTol('fp16', c.z, E), seed);
      const g = geluF64(c.z);
      check(
        'fp16 linearGelu',
        await h.read(y2, M * N),
        round('fp16', g),
        storageTol('fp16', g, (i) => 1.13 * E(i) + 1e-6 * Math.abs(c.z[i])),
        seed,
      );
      const res = add3F64(r1, r2, c.z);
      const Er = (i: number) => dotBound(K + 3, c.absZ[i] + Math.abs(r1[i]) + Math.abs(r2[i]));
      check(
        'fp16 linearResidual',
        await h.read(y3, M * N),
        round('fp16', res),
        storageTol('fp16', res, Er),
        seed,
      );
      check('bf16 linearBias', await h.read(y4, M * N), round('bf16', c.z), storageTol('bf16', c.z, E), seed);
    },
  );

  it('fp16 storage: qkvRotary within one ulp of the rounded oracle', async () => {
    const seed = freshSeed();
    const [T, H, hd, r] = [24, 3, 30, 8];
    const c = qkvCase(mulberry32(seed), T, H, hd, r, 'fp16');
    const got = await runQkv(c, T, H, hd, r, FP16);
    for (const s of ['q', 'k', 'v'] as const) {
      const ref = Float64Array.from(c.ref[s], (v) => roundStorage('fp16', v));
      check(
        `fp16 qkvRotary ${s}`,
        got[s],
        ref,
        storageTol('fp16', c.ref[s], (i) => c.err[s][i]),
        seed,
      );
    }
  });

  it.each([
    [24, 300, 90],
    [67, 1031, 515],
  ])('fp16 accumulation: error above fp32, within its bound, M=%i N=%i K=%i', async (M, N, K) => {
    const seed = freshSeed();
    const c = linearCase(mulberry32(seed), M, N, K, 'fp16');
    const dummy = h.upload(new Float32Array(4));
    const bufs = { x: h.upload(c.x), w: h.upload(c.w), b: h.upload(c.b), dummy };
    const [y32, y16a, y16] = [0, 1, 2].map(() => h.poisoned(M * N));
    await h.run([
      linearBias('fp32', { ...bufs, y: y32 }, M, N, K),
      linearBias('acc16', { ...bufs, y: y16a }, M, N, K, { constants: { STORAGE_PREC: 0, ACC_F16: true } }),
      linearBias('fp16acc', { ...bufs, y: y16 }, M, N, K, { constants: { STORAGE_PREC: 1, ACC_F16: true } }),
    ]);
    // Each of the K accumulate steps rounds the running sum to f16: s_k = (s_{k-1} + x_k w_k)(1 + δ), with
    // |δ| <= 2^-11 + 2^-24 (the product's f32 rounding, then f16), so like any recursive sum
    // |err| <= γ'_{K+1} (Σ|x w| + |b|), γ'_n = n u' / (1 − n u'); plus 2^-25 per step where the sum is an f16
    // subnormal. ~K·2^-11·Σ|xw| for small K·u'.
    const u16 = 2 ** -11 + 2 ** -24;
    const n = K + 1;
    const accBound = (i: number) => ((n * u16) / (1 - n * u16)) * c.absZ[i] + K * 2 ** -25;
    const r32 = check('acc fp32', await h.read(y32, M * N), c.z, linearTol(K, c.absZ), seed);
    const r16a = check('acc ACC_F16', await h.read(y16a, M * N), c.z, accBound, seed);
    check('acc fp16acc', await h.read(y16, M * N), c.z, storageTol('fp16', c.z, accBound), seed);
    expect(r16a.maxAbs, `ACC_F16 max error ${r16a.maxAbs} vs fp32 ${r32.maxAbs}`).toBeGreaterThan(
      4 * r32.maxAbs,
    );
  });
});

describe('fault switches change the result (relative L2 vs the correct oracle > 1e-3)', () => {
  it('FAULT_TILE_OFFSET (x tile staged from k + 2)', async () => {
    const seed = freshSeed();
    const [M, N, K] = [24, 200, 90];
    const c = linearCase(mulberry32(seed), M, N, K);
    const y = h.poisoned(M * N);
    const bufs = {
      x: h.upload(c.x),
      w: h.upload(c.w),
      b: h.upload(c.b),
      dummy: h.upload(new Float32Array(4)),
    };
    await h.run([linearBias('lin', { ...bufs, y }, M, N, K, { constants: { FAULT_TILE_OFFSET: true } })]);
    const got = await h.read(y, M * N);
    expect(got.every(Number.isFinite), `seed ${seed}`).toBe(true);
    expect(relL2(got, c.z), `seed ${seed}`).toBeGreaterThan(1e-3);
  });

  it.each(['FAULT_WIRING', 'FAULT_DROP_BIAS'])('%s (linearResidual)', async (fault) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const [M, N, K] = [24, 90, 200];
    const c = linearCase(rng, M, N, K);
    const [r1, r2] = [randn(rng, M * N), randn(rng, M * N)];
    const y = h.poisoned(M * N);
    const bufs = {
      x: h.upload(c.x),
      w: h.upload(c.w),
      b: h.upload(c.b),
      dummy: h.upload(new Float32Array(4)),
    };
    await h.run([
      linearResidual('out', { ...bufs, r1: h.upload(r1), r2: h.upload(r2), y }, M, N, K, {
        constants: { [fault]: true },
      }),
    ]);
    const got = await h.read(y, M * N);
    expect(got.every(Number.isFinite), `seed ${seed}`).toBe(true);
    expect(relL2(got, add3F64(r1, r2, c.z)), `seed ${seed}`).toBeGreaterThan(1e-3);
    // And it is exactly the fault described (the same fp32 bound as the correct kernel).
    const zNoBias = linearF64(c.x, M, K, c.w, null, N);
    const faulty = fault === 'FAULT_WIRING' ? add3F64(r2, r2, c.z) : add3F64(r1, r2, zNoBias);
    check(
      `fault ${fault}`,
      got,
      faulty,
      (i) => dotBound(K + 3, c.absZ[i] + Math.abs(r1[i]) + 2 * Math.abs(r2[i])),
      seed,
    );
  });

  it('FAULT_GPTJ_ROTARY (interleaved pairs)', async () => {
    const seed = freshSeed();
    const [T, H, hd, r] = [24, 3, 30, 8];
    const rng = mulberry32(seed);
    const d = H * hd;
    const x = randn(rng, T * d);
    const w = randn(rng, 3 * d * d, 1 / Math.sqrt(d));
    const b = randn(rng, 3 * d, 0.5);
    const { cos, sin } = rotaryTables(T, r, 10000);
    const n = H * T * hd;
    const [q, k, v] = [h.poisoned(n), h.poisoned(n), h.poisoned(n)];
    const bufs = { x: h.upload(x), w: h.upload(w), b: h.upload(b), cos: h.upload(cos), sin: h.upload(sin) };
    await h.run([
      qkvRotary('qkv', { ...bufs, q, k, v, dummy: h.upload(new Float32Array(4)) }, T, H, hd, r, {
        constants: { FAULT_GPTJ_ROTARY: true },
      }),
    ]);
    const z = linearF64(x, T, d, w, b, 3 * d);
    const ref = splitHeadsRotaryF64(z, T, H, hd, r, 10000);
    const got = { q: await h.read(q, n), k: await h.read(k, n), v: await h.read(v, n) };
    expect(relL2(got.q, ref.q), `seed ${seed}`).toBeGreaterThan(1e-3);
    expect(relL2(got.k, ref.k), `seed ${seed}`).toBeGreaterThan(1e-3);
    // And it is GPT-J's convention: pairs (2i, 2i + 1) at frequency i (v untouched).
    const gptj = splitHeadsRotaryF64(z, T, H, hd, 0, 10000);
    for (const a of [gptj.q, gptj.k]) {
      for (let o = 0; o < n; o += hd) {
        const t = (o / hd) % T;
        for (let i = 0; i < r / 2; i++) {
          const [y0, y1] = [a[o + 2 * i], a[o + 2 * i + 1]];
          const [cs, sn] = [cos[t * (r / 2) + i], sin[t * (r / 2) + i]];
          [a[o + 2 * i], a[o + 2 * i + 1]] = [y0 * cs - y1 * sn, y1 * cs + y0 * sn];
        }
      }
    }
    check('fault gptj q', got.q, gptj.q, 1e-4, seed);
    check('fault gptj k', got.k, gptj.k, 1e-4, seed);
    check('fault gptj v', got.v, ref.v, 1e-4, seed);
  });
});

describe('split-K (partial GEMM into a workspace, then the reduction runs the epilogue)', () => {
  /** A NaN-poisoned workspace per launch (an unwritten partial then poisons its outputs). */
  const workspace = (floats: number) => h.poisoned(floats);
  // (M, N, K, K per split): splits of 64 with a short last one (515 = 8·64 + 3), two uneven halves, many
  // splits of one BK-multiple, odd sizes everywhere; M = 1 (decode) and M past one block.
  const SPLITS = [
    [1, 67, 515, 64],
    [37, 131, 515, 272],
    [24, 90, 1000, 128],
    [67, 300, 200, 48],
  ] as const;

  it.each(SPLITS)('every epilogue, M=%i N=%i K=%i, K per split %i', async (M, N, K, kChunk) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const c = linearCase(rng, M, N, K);
    const [r1, r2] = [randn(rng, M * N), randn(rng, M * N)];
    const dummy = h.upload(new Float32Array(M * N).fill(1000));
    const bufs = { x: h.upload(c.x), w: h.upload(c.w), b: h.upload(c.b), dummy };
    const ys = [0, 1, 2, 3, 4].map(() => h.poisoned(M * N));
    const opts = { workspace, kChunk, constants: { ...GEMM_SMALL } };
    const specs = [
      linearBiasOps('lin', { ...bufs, y: ys[0] }, M, N, K, opts),
      linearBiasOps('head', { ...bufs, b: null, y: ys[1] }, M, N, K, opts),
      linearGeluOps('up', { ...bufs, y: ys[2] }, M, N, K, opts),
      linearResidualOps('out', { ...bufs, r1: h.upload(r1), r2: h.upload(r2), y: ys[3] }, M, N, K, opts),
      linearResidualOps('out1', { ...bufs, r1: h.upload(r1), r2: null, y: ys[4] }, M, N, K, opts),
    ];
    const splits = Math.ceil(K / kChunk);
    for (const sp of specs) {
      expect(sp.map((d) => d.label)).toEqual([`${sp[1].label}/splitk`, sp[1].label]);
      expect(sp[0].workgroups[2]).toBe(splits);
    }
    await h.run(specs.flat());
    // Any summation order of the K products and the bias (split partials added in order) keeps the unsplit
    // bounds: γ_{K+1} Σ|terms| holds for every order; so do GELU's and the residual sum's.
    check('splitK linearBias', await h.read(ys[0], M * N), c.z, linearTol(K, c.absZ), seed);
    const noBias = linearF64(c.x, M, K, c.w, null, N);
    const absNoBias = linearF64(abs32(c.x), M, K, abs32(c.w), null, N);
    check(
      'splitK linearBias(no bias)',
      await h.read(ys[1], M * N),
      noBias,
      (i) => dotBound(K + 1, absNoBias[i]) + 1e-30,
      seed,
    );
    const g = geluF64(c.z);
    check('splitK linearGelu', await h.read(ys[2], M * N), g, linearGeluTol(K, c.z, c.absZ), seed);
    const resTol = linearResidualTol(K, c.absZ, r1, r2);
    check('splitK linearResidual', await h.read(ys[3], M * N), add3F64(r1, r2, c.z), resTol, seed);
    check('splitK linearResidual(1)', await h.read(ys[4], M * N), addF64(c.z, r1), resTol, seed);
  });

  it('storage precisions round once, after the reduction; fp16 accumulation rounds the partial sums too', async () => {
    const seed = freshSeed();
    const [M, N, K, kChunk] = [24, 131, 515, 128];
    const c = linearCase(mulberry32(seed), M, N, K, 'fp16');
    const dummy = h.upload(new Float32Array(4));
    const bufs = { x: h.upload(c.x), w: h.upload(c.w), b: h.upload(c.b), dummy };
    const ys = [0, 1, 2, 3, 4].map(() => h.poisoned(M * N));
    const opts = (STORAGE_PREC: number, ACC_F16: boolean) => ({
      workspace,
      kChunk,
      constants: { STORAGE_PREC, ACC_F16 },
    });
    await h.run([
      ...linearBiasOps('fp16', { ...bufs, y: ys[0] }, M, N, K, opts(1, false)),
      ...linearBiasOps('bf16', { ...bufs, y: ys[1] }, M, N, K, opts(2, false)),
      ...linearBiasOps('acc16', { ...bufs, y: ys[2] }, M, N, K, opts(0, true)),
      ...linearBiasOps('fp16acc', { ...bufs, y: ys[3] }, M, N, K, opts(1, true)),
      ...linearBiasOps('fp32', { ...bufs, y: ys[4] }, M, N, K, opts(0, false)),
    ]);
    const E = (i: number) => dotBound(K + 2, c.absZ[i]);
    const round = (p: 'fp16' | 'bf16') => Float64Array.from(c.z, (v) => roundStorage(p, v));
    // One storage rounding of an f32 sum: within one ulp of the rounded oracle (storageTol). A partial rounded
    // to storage precision as well would add up to ceil(K / kChunk) more half-ulps and fail this.
    check('splitK fp16', await h.read(ys[0], M * N), round('fp16'), storageTol('fp16', c.z, E), seed);
    check('splitK bf16', await h.read(ys[1], M * N), round('bf16'), storageTol('bf16', c.z, E), seed);
    // fp16 accumulation: every accumulate step, in the splits and in the reduction, rounds to f16 — a recursive
    // sum of K + 1 terms in some order, so the unsplit bound γ'_{K+1} (Σ|xw| + |b|) + K·2^-25 holds.
    const u16 = 2 ** -11 + 2 ** -24;
    const n = K + 1;
    const accBound = (i: number) => ((n * u16) / (1 - n * u16)) * c.absZ[i] + K * 2 ** -25;
    const r16 = check('splitK ACC_F16', await h.read(ys[2], M * N), c.z, accBound, seed);
    check('splitK fp16acc', await h.read(ys[3], M * N), c.z, storageTol('fp16', c.z, accBound), seed);
    // And the accumulators really were rounded: well above the fp32 split result's error.
    const r32 = check('splitK fp32', await h.read(ys[4], M * N), c.z, (i) => E(i) + 1e-30, seed);
    expect(r16.maxAbs, `seed ${seed}: ACC_F16 ${r16.maxAbs} vs fp32 ${r32.maxAbs}`).toBeGreaterThan(
      4 * r32.maxAbs,
    );
  });

  it("a row's bits do not depend on M: the K partition is the same at every M (decode = whole forward)", async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const [M, N, K] = [37, 90, 1000];
    const c = linearCase(rng, M, N, K);
    const row = 29;
    const dummy = h.upload(new Float32Array(4));
    const [w, b] = [h.upload(c.w), h.upload(c.b)];
    const yAll = h.poisoned(M * N);
    const yRow = h.poisoned(N);
    // The policy's K partition for (N, K), and tiles that differ between M = 37 and M = 1.
    const policy: GemmPolicy = {
      ...UNKNOWN_ADAPTER,
      table: { measuredOn: 'test', date: '', tiles: {}, kChunks: { '90x1000': 192 } },
    };
    const all = linearBiasOps('all', { x: h.upload(c.x), w, b, y: yAll, dummy }, M, N, K, {
      policy,
      workspace,
      constants: { ...GEMM_MEDIUM },
    });
    const one = linearBiasOps(
      'one',
      { x: h.upload(c.x.slice(row * K, (row + 1) * K)), w, b, y: yRow, dummy },
      1,
      N,
      K,
      { policy, workspace },
    );
    expect(all.length).toBe(2);
    expect(one.length).toBe(2);
    await h.run([...all, ...one]);
    const got = await h.read(yAll, M * N);
    expect(Array.from(await h.read(yRow, N)), `seed ${seed}`).toEqual(
      Array.from(got.subarray(row * N, (row + 1) * N)),
    );
    check('splitK row', got, c.z, linearTol(K, c.absZ), seed);
  });

  it.each([
    [37, 3, 30, 8, 32], // K = 90: splits of 32, 32, 26
    [29, 3, 15, 6, 16], // odd head dim (a padding column per segment), K = 45: three splits of 16 and a short one
    [13, 1, 256, 64, 96], // the widest head, K = 256: splits of 96, 96, 64
  ] as const)(
    'qkv_rotary split-K, T=%i H=%i hd=%i r=%i, K per split %i: the oracle, and a decoded row keeps its bits',
    async (T, H, hd, r, kChunk) => {
      const seed = freshSeed();
      const qc = qkvCase(mulberry32(seed), T, H, hd, r);
      const n = H * T * hd;
      const [q, k, v] = [h.poisoned(n), h.poisoned(n), h.poisoned(n)];
      const dummy = h.upload(new Float32Array(4));
      const [x, w, b, cos, sin] = [qc.x, qc.w, qc.b, qc.cos, qc.sin].map((a) => h.upload(a));
      const opts = { workspace, kChunk };
      const whole = qkvRotaryOps('qkv', { x, w, b, cos, sin, q, k, v, dummy }, T, H, hd, r, opts);
      expect(whole.map((s) => s.label)).toEqual(['qkv/splitk', 'qkv']);
      expect(whole[0].workgroups[2]).toBe(Math.ceil((H * hd) / kChunk));
      // Row t alone at position t (KV-cache decoding): q [H, 1, hd]; k, v into rows t of fresh [H, T, hd].
      const t = T - 2;
      const d = H * hd;
      const [q1, k1, v1] = [h.poisoned(H * hd), h.poisoned(n), h.poisoned(n)];
      const xRow = h.upload(qc.x.slice(t * d, (t + 1) * d));
      const one = qkvRotaryOps(
        'row',
        { x: xRow, w, b, cos, sin, q: q1, k: k1, v: v1, dummy },
        1,
        H,
        hd,
        r,
        opts,
        {
          p0: t,
          rows: T,
        },
      );
      await h.run([...whole, ...one]);
      const got = { q: await h.read(q, n), k: await h.read(k, n), v: await h.read(v, n) };
      // Any order of the K products and the bias keeps the bounds (γ_{K+2}·A covers every order).
      for (const s of ['q', 'k', 'v'] as const)
        check(`splitK qkv ${s}`, got[s], qc.ref[s], (i) => qc.err[s][i], seed);
      const row = (a: Float32Array, rows: number, at: number) =>
        Array.from({ length: H }, (_, hh) =>
          Array.from(a.subarray((hh * rows + at) * hd, (hh * rows + at + 1) * hd)),
        ).flat();
      expect(row(await h.read(q1, H * hd), 1, 0), `q row (seed ${seed})`).toEqual(row(got.q, T, t));
      expect(row(await h.read(k1, n), T, t), `k row (seed ${seed})`).toEqual(row(got.k, T, t));
      expect(row(await h.read(v1, n), T, t), `v row (seed ${seed})`).toEqual(row(got.v, T, t));
    },
  );

  it('refuses a split without a workspace and a K per split that is not a multiple of BK', () => {
    expect(() => gemmLaunch('x', 8, 64, 512, { kChunk: 128 })).toThrow(/needs a workspace/);
    expect(() => gemmLaunch('x', 8, 64, 512, { kChunk: 100, workspace })).toThrow(/multiple of BK/);
    expect(() => gemmLaunch('x', 0, 64, 512)).toThrow(/M = 0/);
    // kChunk ≥ K is no split; the single-dispatch launchers never split whatever the policy says.
    expect(gemmLaunch('x', 8, 64, 512, { kChunk: 4096, workspace }).split).toBe(1);
    const d = h.upload(new Float32Array(4));
    const spec = linearBias('one', { x: d, w: d, b: null, y: d, dummy: d }, 8, 64, 4096, {
      policy: UNKNOWN_ADAPTER,
    });
    expect(spec.workgroups[2]).toBe(1);
  });

  it('the policy: a table per adapter, the heuristic elsewhere, no split on CPU adapters, K partition per (N, K)', () => {
    const info = (vendor: string, device: string, description = '') => ({
      vendor,
      architecture: '',
      device,
      description,
    });
    expect(gemmPolicyFor(info('google', 'swiftshader-device-subzero-', 'SwiftShader driver 5.0.0'))).toBe(
      CPU_ADAPTER,
    );
    expect(gemmPolicyFor(info('nvidia', 'nvidia-h200', 'NVIDIA: 580.159.04'))).toBe(HOPPER_POLICY);
    expect(gemmPolicyFor(info('nvidia', 'nvidia-h100-80gb-hbm3'))).toBe(HOPPER_POLICY);
    expect(gemmPolicyFor(info('amd', 'radeon'))).toBe(UNKNOWN_ADAPTER);
    // CPU adapters: never split, one valid tile configuration at every shape. Heuristic: split the small-grid,
    // deep-K shapes, the same partition at every M.
    expect(chooseGemm(128, 512, 2048, CPU_ADAPTER).kChunk).toBe(2048);
    for (const [M, N, K] of [
      [1, 256, 1024],
      [37, 1024, 256],
      [513, 50304, 512],
    ])
      expect(chooseGemm(M, N, K, CPU_ADAPTER).tiles).toBe(GEMM_CPU);
    expect(gemmTilesProblem(GEMM_CPU)).toBeNull();
    expect(TUNE_CONFIGS).toContainEqual(GEMM_CPU); // so the every-configuration test covers it
    const c128 = chooseGemm(128, 512, 2048, UNKNOWN_ADAPTER);
    expect(c128.kChunk).toBeLessThan(2048);
    expect(c128.kChunk % 64).toBe(0);
    for (const M of [1, 7, 512, 4096])
      expect(chooseGemm(M, 512, 2048, UNKNOWN_ADAPTER).kChunk).toBe(c128.kChunk);
    expect(heuristicChunk(50304, 512)).toBe(512); // the LM head fills the GPU unsplit
    expect(heuristicChunk(2048, 2048)).toBe(2048);
    expect(chunkFor(515, 8)).toBe(128);
    expect(chunkFor(515, 1)).toBe(515);
    // A table entry wins where it fits the device's limits; otherwise the heuristic tiles.
    const big = { ...GEMM_DEFAULT, BM: 128, BN: 256 }; // 512 threads
    const table = {
      measuredOn: 'test',
      date: '',
      tiles: { '128x512x2048': big },
      kChunks: { '512x2048': 256 },
    };
    const p: GemmPolicy = { name: 'test', table, splitK: true };
    expect(chooseGemm(128, 512, 2048, p)).toEqual({ tiles: big, kChunk: 256 });
    const limited = {
      ...p,
      limits: { maxComputeInvocationsPerWorkgroup: 256, maxComputeWorkgroupStorageSize: 16384 },
    };
    expect(chooseGemm(128, 512, 2048, limited).tiles).toBe(GEMM_SMALL);
  });

  it('a cap on the K per split splits every longer partition further, the same at every M', () => {
    // Every (K, partition, cap) of Pythia's shapes and of random ones: no split longer than the cap unless
    // MAX_SPLIT (16) splits would be needed, the chunk a multiple of the granule, never longer than before.
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const cases: [number, number, number][] = [];
    for (const K of [512, 768, 1024, 2048, 2560, 4096, 8192, 10240, 16384, 20480])
      for (const cap of [256, 512, 1024]) cases.push([K, K, cap], [K, chunkFor(K, 2), cap]);
    for (let i = 0; i < 300; i++) {
      const K = 1 + Math.floor(rng() * 30000);
      cases.push([K, chunkFor(K, 1 + Math.floor(rng() * 16)), 64 * (1 + Math.floor(rng() * 32))]);
    }
    for (const [K, chunk, cap] of cases) {
      const c = cappedChunk(K, chunk, cap);
      const at = `K ${K}, chunk ${chunk}, cap ${cap} -> ${c} (seed ${seed})`;
      expect(c <= chunk, at).toBe(true);
      expect(c === K || c % K_CHUNK_GRANULE === 0, at).toBe(true);
      expect(c <= cap || c === Math.min(chunk, chunkFor(K, 16)), at).toBe(true); // 16 = MAX_SPLIT
      if (chunk <= cap) expect(c, at).toBe(chunk);
      else expect(Math.ceil(K / c) <= Math.max(16, Math.ceil(K / chunk)), at).toBe(true);
    }
    // Through chooseGemm: the table's partition, capped, at every M (a decode row keeps a whole forward's bits).
    const table = { measuredOn: 'test', date: '', tiles: {}, kChunks: { '2048x8192': 8192 } };
    const capped: GemmPolicy = { name: 'test', table, splitK: true, maxKChunk: 1024 };
    for (const M of [1, 4, 128, 512]) {
      expect(chooseGemm(M, 2048, 8192, capped).kChunk).toBe(1024);
      expect(chooseGemm(M, 2048, 8192, { ...capped, maxKChunk: undefined }).kChunk).toBe(8192);
    }
    expect(chooseGemm(128, 2048, 8192, { ...capped, splitK: false }).kChunk).toBe(8192);
    // Outputs of CAP_WIDE_N columns or more (an LM head) keep their partition.
    const head = { ...table, kChunks: { '50304x2048': 2048, [`${CAP_WIDE_N - 1}x2048`]: 2048 } };
    expect(chooseGemm(1, 50304, 2048, { ...capped, table: head }).kChunk).toBe(2048);
    expect(chooseGemm(1, CAP_WIDE_N - 1, 2048, { ...capped, table: head }).kChunk).toBe(1024);
  });

  it("the policy's workgroup order reaches the tiled GEMM where W is large and has several row blocks, never the reduction", () => {
    // Building the specs touches no buffer: stand-ins do.
    const b = {} as GPUBuffer;
    const io = { x: b, w: b, b: null, y: b, dummy: b };
    const P = HOPPER_POLICY;
    expect(P.groupM).toBe(8);
    const order = (specs: { constants?: Record<string, unknown> }[]) =>
      specs.map((s) => s.constants?.GEMM_GROUP_M);
    const ws = { workspace: () => b };
    // 512 × 2048 × 8192 (16 Mi weights) splits K under the cap: the partial GEMM ordered, its reduction not.
    expect(order(linearBiasOps('t', io, 512, 2048, 8192, { policy: P, ...ws }))).toEqual([8, undefined]);
    // Qwen2.5-0.5B's gate/up and LM head at T = 512 (8.5 and 130 Mi weights), unsplit.
    expect(order(linearBiasOps('t', io, 512, 9728, 896, { policy: P }))).toEqual([8]);
    expect(order(linearBiasOps('t', io, 512, 151936, 896, { policy: P }))).toEqual([8]);
    // Below the weights' threshold (its down projection, 4.2 Mi), one row block, the caller's own order, no groupM.
    expect(order(linearBiasOps('t', io, 512, 896, 4864, { policy: P, ...ws }))).toEqual([
      undefined,
      undefined,
    ]);
    const one = chooseGemm(32, 9728, 896, P).tiles.BM;
    expect(order(linearBiasOps('t', io, one, 9728, 896, { policy: P }))).toEqual([undefined]);
    const own = { policy: P, constants: { GEMM_GROUP_M: 2 } };
    expect(order(linearBiasOps('t', io, 512, 9728, 896, own))).toEqual([2]);
    expect(order(linearBiasOps('t', io, 512, 9728, 896, { policy: UNKNOWN_ADAPTER }))).toEqual([undefined]);
    // groupMFor is the rule the launcher applies (and the benches' sweeps).
    expect(groupMFor(P, 512, 9728, 896, 128)).toBe(8);
    expect(groupMFor(P, 128, 9728, 896, 128)).toBe(1);
    expect(groupMFor({ ...P, groupMinWeights: undefined }, 512, 896, 4864, 128)).toBe(8);
  });
});
