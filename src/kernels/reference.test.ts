// Every reference kernel against its fp64 oracle, on fresh random inputs, NaN-poisoned outputs and sizes
// that are not multiples of the tile sizes (TILE 16, workgroups 128/256): d = 90, V = 300, ff = 200,
// T in {1, 24, 129}. Tolerances are derived per kernel in the comments; a failure prints the seed
// (replay with KERNEL_SEED=<seed>).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32, randn } from '../numeric/random';
import { attnScores, attnValues, softmaxCausal } from './attention';
import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from './cpu/attention';
import { embeddingF64 } from './cpu/embedding';
import { geluF64 } from './cpu/gelu';
import { layerNormF64 } from './cpu/layernorm';
import { linearF64 } from './cpu/linear';
import { add3F64, addF64 } from './cpu/residual';
import { splitHeadsRotaryF64 } from './cpu/rotary';
import { layerNormTol } from './custom/tolerances';
import { embedding } from './embedding';
import { gelu } from './gelu';
import { layerNorm } from './layernorm';
import { linear } from './linear';
import { residualAdd } from './residual';
import { rotary, rotaryTables } from './rotary';
import { compare, createHarness, dotBound, freshSeed, type Harness, U32 } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

const d = 90;
const V = 300;
const ff = 200;
const H = 3;
const hd = 30;
const Ts = [1, 24, 129];

function check(
  what: string,
  got: Float32Array,
  ref: ArrayLike<number>,
  tol: number | ((i: number) => number),
  seed: number,
) {
  const r = compare(what, got, ref, tol, seed);
  expect(r.ok, r.report).toBe(true);
}

describe('reference kernels vs fp64 oracle', () => {
  it.each(Ts)('embedding gather, T=%i (exact copy)', async (T) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const table = randn(rng, V * d);
    const ids = Array.from({ length: T }, () => Math.floor(rng() * V));
    const out = h.poisoned(T * d);
    // Two row chunks, as a split vocabulary is gathered: rows [0, 137) and [137, V).
    const cut = 137;
    const idsBuf = h.upload(new Uint32Array(ids));
    const [lo, hi] = [table.subarray(0, cut * d), table.subarray(cut * d)];
    await h.run([
      embedding('embed[0]', { ids: idsBuf, table: h.upload(lo), out }, T, d, { row0: 0, rows: cut }),
      embedding('embed[1]', { ids: idsBuf, table: h.upload(hi), out }, T, d, { row0: cut, rows: V - cut }),
    ]);
    check('embedding', await h.read(out, T * d), embeddingF64(table, d, ids), 0, seed);
  });

  it.each(Ts)('layernorm, T=%i', async (T) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    // An offset mean makes the two-pass variance matter.
    const x = randn(rng, T * d, 3).map((v) => v + 5);
    const w = randn(rng, d).map((v) => 1 + 0.2 * v);
    const b = randn(rng, d, 0.2);
    const y = h.poisoned(T * d);
    await h.run([layerNorm('ln', { x: h.upload(x), weight: h.upload(w), bias: h.upload(b), y }, T, d, 1e-5)]);
    const ref = layerNormF64(x, T, d, w, b, 1e-5);
    // The mean's rounding shifts every x̂ by δmean/σ, the rest is ≤ (d + 10)·u relative (layerNormTol).
    const tol = layerNormTol(x, T, d, w, ref, 1e-5);
    check('layernorm', await h.read(y, T * d), ref, tol, seed);
  });

  it.each([
    [1, V, d],
    [24, 3 * d, d],
    [129, ff, d],
    [24, d, ff],
    [129, V, d],
  ])('linear M=%i N=%i K=%i with bias', async (M, N, K) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const x = randn(rng, M * K);
    const w = randn(rng, N * K, 1 / Math.sqrt(K));
    const b = randn(rng, N, 0.5);
    const y = h.poisoned(M * N);
    const dummy = h.upload(new Float32Array(4));
    await h.run([linear('lin', { x: h.upload(x), w: h.upload(w), b: h.upload(b), y, dummy }, M, N, K)]);
    const ref = linearF64(x, M, K, w, b, N);
    const absRef = linearF64(x.map(Math.abs), M, K, w.map(Math.abs), b.map(Math.abs), N);
    // Any summation order of K products plus the bias: |err| <= γ_{K+1} Σ|x_k w_k| + |b|.
    check('linear', await h.read(y, M * N), ref, (i) => dotBound(K + 2, absRef[i]) + 1e-30, seed);
  });

  it('linear without bias (the LM head)', async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const [M, N, K] = [24, V, d];
    const x = randn(rng, M * K);
    const w = randn(rng, N * K, 1 / Math.sqrt(K));
    const y = h.poisoned(M * N);
    // A non-zero dummy proves the kernel ignores the bias binding when has_bias = 0.
    const dummy = h.upload(new Float32Array(V).fill(1000));
    await h.run([linear('head', { x: h.upload(x), w: h.upload(w), b: null, y, dummy }, M, N, K)]);
    const absRef = linearF64(x.map(Math.abs), M, K, w.map(Math.abs), null, N);
    check(
      'linear(no bias)',
      await h.read(y, M * N),
      linearF64(x, M, K, w, null, N),
      (i) => dotBound(K + 1, absRef[i]),
      seed,
    );
  });

  // [T, H, hd, r]: the model's shape at T in Ts, then Pythia's other head dims (80, 96 with full rotary as in
  // RedPajama-INCITE, 256) and an odd one.
  const headShapes: Array<[number, number, number, number]> = [
    ...Ts.map((T): [number, number, number, number] => [T, H, hd, 8]), // rotary_pct ≈ 0.27 of hd = 30
    [23, 2, 80, 20],
    [17, 2, 96, 96],
    [13, 1, 256, 64],
    [19, 2, 37, 8],
  ];
  it.each(headShapes)('split heads + rotary (rotate-half), T=%i H=%i hd=%i r=%i', async (T, H, hd, r) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const d = H * hd;
    const qkv = randn(rng, T * 3 * d);
    const { cos, sin } = rotaryTables(T, r, 10000);
    const q = h.poisoned(H * T * hd);
    const k = h.poisoned(H * T * hd);
    const v = h.poisoned(H * T * hd);
    await h.run([
      rotary('rot', { qkv: h.upload(qkv), cos: h.upload(cos), sin: h.upload(sin), q, k, v }, T, H, hd, r),
    ]);
    const ref = splitHeadsRotaryF64(qkv, T, H, hd, r, 10000);
    // cos/sin are rounded to f32 once (|δ| <= u each) and out = a·c ∓ b·s takes 3 more roundings:
    // |err| <= 4u·(|a| + |b|) <= 8u·max|x| with |x| < 6 here.
    const tol = 8 * U32 * 6;
    check('q', await h.read(q, H * T * hd), ref.q, tol, seed);
    check('k', await h.read(k, H * T * hd), ref.k, tol, seed);
    check('v', await h.read(v, H * T * hd), ref.v, 0, seed);
  });

  it.each(headShapes)('attention scores, softmax and values, T=%i H=%i hd=%i', async (T, H, hd) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const d = H * hd;
    const qa = randn(rng, H * T * hd);
    const ka = randn(rng, H * T * hd);
    const va = randn(rng, H * T * hd);
    const s = h.poisoned(H * T * T);
    const p = h.poisoned(H * T * T);
    const ctx = h.poisoned(T * d);
    const [qb, kb, vb] = [h.upload(qa), h.upload(ka), h.upload(va)];
    await h.run([
      attnScores('scores', { q: qb, k: kb, s }, H, T, hd),
      softmaxCausal('probs', { s, p }, H, T),
      attnValues('ctx', { p, v: vb, ctx }, H, T, hd),
    ]);
    const sRef = attentionScoresF64(qa, ka, H, T, hd);
    const sMasked = sRef.map((x) => (Number.isFinite(x) ? x : 0));
    const sAbs = attentionScoresF64(qa.map(Math.abs), ka.map(Math.abs), H, T, hd);
    const sGot = await h.read(s, H * T * T);
    // The dot product of hd terms (γ_hd), then × the scale, itself 1/√hd rounded to f32 (one more u) and the
    // product rounded (one more): γ_{hd+2}·Σ|q·k|/√hd. (γ_{hd+1}, the bound before, missed the scale's own
    // rounding and failed at 1.002× with seed 402949738.)
    check(
      'scores',
      sGot,
      sMasked,
      (i) => dotBound(hd + 2, Number.isFinite(sAbs[i]) ? sAbs[i] : 0) / Math.sqrt(hd) + 1e-30,
      seed,
    );
    // Softmax of the GPU's own scores (the oracle run on them), so this checks the softmax alone:
    // exp is accurate to (3 + 2|x|) ulp in WGSL and the row sum to γ_T; p <= 1.
    const sGotCausal = Float64Array.from(sGot, (x, i) =>
      i % T > Math.floor(i / T) % T ? Number.NEGATIVE_INFINITY : x,
    );
    const pRef = softmaxCausalF64(sGotCausal, H, T);
    const pGot = await h.read(p, H * T * T);
    check('probs', pGot, pRef, (i) => (T + 60) * U32 * Math.abs(pRef[i]) + 1e-9, seed);
    // Values from the GPU's probabilities: a T-term dot product per output.
    const cRef = attentionValuesF64(pGot, va, H, T, hd);
    const cAbs = attentionValuesF64(pGot, va.map(Math.abs), H, T, hd);
    check('ctx', await h.read(ctx, T * d), cRef, (i) => dotBound(T + 1, cAbs[i]) + 1e-30, seed);
    // End to end against the oracle from the inputs: the chain adds its errors, about 1e-6 relative.
    const chain = attentionValuesF64(softmaxCausalF64(sRef, H, T), va, H, T, hd);
    check('attention chain', await h.read(ctx, T * d), chain, 2e-5, seed);
  });

  it('gelu (exact erf) over a wide range, tails included', async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const n = 4099;
    const x = randn(rng, n, 4);
    x[0] = 0;
    x[1] = -12;
    x[2] = 12;
    x[3] = -1e-8;
    x[4] = 40;
    const y = h.poisoned(n);
    await h.run([gelu('gelu', { x: h.upload(x), y }, n)]);
    // erfc carries < 1.2e-7 relative error, exp in WGSL up to (3 + 2·z²) ulp; gelu = 0.5·x·erfc(-x/√2):
    // relative bound (2e-7 + (12 + z²)·u) on the erfc factor, a few ulps for the products.
    const ref = geluF64(x);
    check(
      'gelu',
      await h.read(y, n),
      ref,
      (i) => (4e-7 + (16 + x[i] * x[i]) * U32) * Math.abs(x[i]) + 1e-30,
      seed,
    );
  });

  it.each([false, true])('residual add (three inputs: %s) in HF order, exact', async (three) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const n = 24 * d + 7;
    const [a, b, c] = [randn(rng, n), randn(rng, n), randn(rng, n)];
    const out = h.poisoned(n);
    await h.run([
      residualAdd('add', { a: h.upload(a), b: h.upload(b), c: three ? h.upload(c) : null, out }, n),
    ]);
    // The same two f32 roundings as HF ((c + b) + a or b + a), so f32 results are bit-identical.
    const f = Math.fround;
    const ref = three
      ? Float64Array.from(a, (ai, i) => f(f(c[i] + b[i]) + ai))
      : Float64Array.from(a, (ai, i) => f(b[i] + ai));
    check('residual', await h.read(out, n), ref, 0, seed);
    const exact = three ? add3F64(a, b, c) : addF64(a, b);
    check('residual vs fp64', await h.read(out, n), exact, 4 * U32 * 4, seed);
  });
});
