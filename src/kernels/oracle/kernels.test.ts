// The oracle's df kernels (those that need no exp/erf) against the CPU fp64 kernels, on fresh random inputs
// that use both halves of each df value, NaN-poisoned outputs and sizes that are not multiples of the tiles
// (linear: 32 × 32 blocks, BK 16; workgroups of 64/256). DF_FMA = false on SwiftShader (its fma is not fused).
//
// Tolerances: u = 2^-24, one df operation carries a relative error of at most ~3u² = 3·2^-48 (accurate
// df add, Joldes–Muller–Popescu 2017; df × f32 ≤ 2u², df × df ≤ 5u²), each relative to the magnitudes it
// combines. A sum of n products then errs by at most ~(5n + few)·u²·Σ|terms|; the bounds below use 8 per
// term. Any f32 rounding in the chain (2^-24 ≈ 6e-8) breaks them by six orders or more.
import { afterAll, beforeAll, describe, it } from 'vitest';
import { packF16 } from '../../engine/gpu-model';
import { toDfPairs } from '../../numeric/double-float';
import { mulberry32 } from '../../numeric/random';
import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from '../cpu/attention';
import { embeddingF64 } from '../cpu/embedding';
import { geluF64 } from '../cpu/gelu';
import { layerNormF64 } from '../cpu/layernorm';
import { linearF64 } from '../cpu/linear';
import { add3F64, addF64 } from '../cpu/residual';
import { dfGqaAttention } from '../ops/attention';
import { createHarness, freshSeed, type Harness } from '../testing';
import { dfEmbedding } from './embedding';
import { dfGelu } from './gelu';
import { dfLayerNorm } from './layernorm';
import { dfLinear } from './linear';
import { dfPromote } from './promote';
import { dfResidual } from './residual';
import { checkDf, poisonedDf, randDf, readDfH } from './testing';

const U2 = 2 ** -48;
const FMA = { DF_FMA: false };
const FMA_OPTS = { constants: FMA };

let h: Harness;
let dummy: GPUBuffer;
beforeAll(async () => {
  h = await createHarness();
  dummy = h.upload(new Float32Array(4));
});
afterAll(() => h?.destroy());

describe('oracle df kernels vs CPU fp64', () => {
  it.each([
    [37, 45, 70, false],
    [1, 33, 16, false],
    [40, 70, 33, true],
  ] as const)('linear M=%i N=%i K=%i, f16 weights %s', async (M, N, K, f16) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const x = randDf(rng, M * K);
    // f16 weights: multiples of 2^-10 in (-2, 2), exact in f16 (as an fp16 checkpoint's are).
    const w = f16
      ? Float32Array.from({ length: N * K }, () => Math.round((rng() * 4 - 2) * 1024) / 1024)
      : randDf(rng, N * K, 1 / Math.sqrt(K)).pairs.filter((_, i) => i % 2 === 0);
    const b = randDf(rng, N, 0.1).pairs.filter((_, i) => i % 2 === 0);
    const y = poisonedDf(h, M * N);
    const yn = poisonedDf(h, M * N);
    const wBuf = h.upload(f16 ? packF16(w) : w);
    const opts = { constants: { ...FMA, W_F16: f16 } };
    await h.run([
      dfLinear('linear', { x: h.upload(x.pairs), w: wBuf, b: h.upload(b), y, dummy }, M, N, K, opts),
      dfLinear('linear_nobias', { x: h.upload(x.pairs), w: wBuf, b: null, y: yn, dummy }, M, N, K, opts),
    ]);
    const ref = linearF64(x.values, M, K, w, b, N);
    const refN = linearF64(x.values, M, K, w, null, N);
    const absSum = linearF64(x.values.map(Math.abs), M, K, w.map(Math.abs), null, N);
    const tol = (i: number) => (8 * K + 16) * U2 * (absSum[i] + Math.abs(b[i % N]));
    checkDf('linear', await readDfH(h, y, M * N), ref, tol, seed);
    checkDf('linear (no bias)', await readDfH(h, yn, M * N), refN, tol, seed);
  });

  it('embedding gather from two row chunks, and f32 -> df promotion (exact)', async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const [V, d, T, cut] = [300, 90, 29, 137];
    const table = randDf(rng, V * d).pairs.filter((_, i) => i % 2 === 0);
    const ids = Array.from({ length: T }, (_, t) => (t === 0 ? 0 : t === 1 ? V - 1 : Math.floor(rng() * V)));
    const out = poisonedDf(h, T * d);
    const idsBuf = h.upload(new Uint32Array(ids));
    const xf = table.subarray(0, T * d);
    const promoted = poisonedDf(h, T * d);
    await h.run([
      dfEmbedding(
        'embed[0]',
        { ids: idsBuf, table: h.upload(table.subarray(0, cut * d)), out },
        T,
        d,
        { row0: 0, rows: cut },
        { constants: FMA },
      ),
      dfEmbedding(
        'embed[1]',
        { ids: idsBuf, table: h.upload(table.subarray(cut * d)), out },
        T,
        d,
        { row0: cut, rows: V - cut },
        { constants: FMA },
      ),
      dfPromote('promote', { x: h.upload(xf), out: promoted }, T * d),
    ]);
    checkDf('embedding', await readDfH(h, out, T * d), embeddingF64(table, d, ids), () => 0, seed);
    checkDf('promote', await readDfH(h, promoted, T * d), Float64Array.from(xf), () => 0, seed);
  });

  it.each([
    [1, 90, 1e-5],
    [29, 257, 1e-6],
  ])('layernorm rows=%i d=%i eps=%f', async (rows, d, eps) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    // A mean offset so the centring cancels digits, as in a residual stream.
    const x = randDf(rng, rows * d, 2);
    for (let i = 0; i < rows * d; i++) {
      x.pairs[2 * i] += 3;
      x.values[i] = x.pairs[2 * i] + x.pairs[2 * i + 1];
    }
    const w = randDf(rng, d, 0.5)
      .pairs.filter((_, i) => i % 2 === 0)
      .map((v) => v + 1);
    const b = randDf(rng, d, 0.1).pairs.filter((_, i) => i % 2 === 0);
    const y = poisonedDf(h, rows * d);
    await h.run([
      dfLayerNorm('ln', { x: h.upload(x.pairs), weight: h.upload(w), bias: h.upload(b), y }, rows, d, eps, {
        constants: FMA,
      }),
    ]);
    const ref = layerNormF64(x.values, rows, d, w, b, eps);
    // Per row: the mean carries ~d·u²·mean|x| absolute error, which reaches the output scaled by inv·|w|.
    const scale = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let s = 0;
      let sq = 0;
      for (let c = 0; c < d; c++) s += x.values[r * d + c];
      const mean = s / d;
      let abs = 0;
      for (let c = 0; c < d; c++) {
        sq += (x.values[r * d + c] - mean) ** 2;
        abs += Math.abs(x.values[r * d + c]);
      }
      scale[r] = abs / d / Math.sqrt(sq / d + eps);
    }
    const tol = (i: number) => {
      const c = i % d;
      return (
        (8 * d + 64) *
        U2 *
        (Math.abs(ref[i] - b[c]) + Math.abs(b[c]) + scale[Math.floor(i / d)] * Math.abs(w[c]))
      );
    };
    checkDf('layernorm', await readDfH(h, y, rows * d), ref, tol, seed);
  });

  /** The rows q0..T−1 of each head of a [H, T, T] array: [H, T − q0, T]. */
  const queryRows = (a: Float64Array, H: number, T: number, q0: number) => {
    const out = new Float64Array(H * (T - q0) * T);
    for (let hh = 0; hh < H; hh++)
      out.set(a.subarray((hh * T + q0) * T, (hh + 1) * T * T), hh * (T - q0) * T);
    return out;
  };

  // The attention core's scores and weighted values (oracle/gqa_scores, gqa_values; one KV head a query head, as
  // GPT-NeoX's), for the query rows q0..T−1 over every key, against the CPU fp64 forms' rows.
  it.each([
    [1, 3, 30, 0],
    [37, 2, 24, 0],
    [37, 2, 24, 29],
    [17, 2, 80, 5],
    [13, 1, 96, 12],
    [19, 1, 256, 0],
    [11, 2, 37, 4],
  ])('scores and weighted values T=%i H=%i hd=%i, query rows from %i', async (T, H, hd, q0) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const R = T - q0;
    const q = randDf(rng, H * T * hd);
    const k = randDf(rng, H * T * hd);
    const v = randDf(rng, H * T * hd);
    // Probabilities: a causal softmax of random scores computed on the CPU, handed over as df (the query rows).
    const probs = queryRows(softmaxCausalF64(randDf(rng, H * T * T, 2).values, H, T), H, T, q0);
    const pPairs = toDfPairs(probs);
    const pVals = Float64Array.from(
      pPairs.filter((_, i) => i % 2 === 0),
      (hi, i) => hi + pPairs[2 * i + 1],
    );
    const s = poisonedDf(h, H * R * T);
    const ctx = poisonedDf(h, R * H * hd);
    const b = {
      q: h.upload(q.pairs),
      k: h.upload(k.pairs),
      v: h.upload(v.pairs),
      scores: s,
      probs: h.upload(pPairs),
      ctx,
    };
    const [scores, , values] = dfGqaAttention('attn', b, { H, KV: H, T, hd, q0, window: null }, FMA_OPTS);
    await h.run([scores, values]);
    const ref = queryRows(attentionScoresF64(q.values, k.values, H, T, hd), H, T, q0).map((x) =>
      x === Number.NEGATIVE_INFINITY ? 0 : x,
    );
    const absS = queryRows(
      attentionScoresF64(q.values.map(Math.abs), k.values.map(Math.abs), H, T, hd),
      H,
      T,
      q0,
    );
    checkDf(
      'scores',
      await readDfH(h, s, H * R * T),
      ref,
      (i) => (absS[i] === Number.NEGATIVE_INFINITY ? 0 : (8 * hd + 16) * U2 * absS[i]),
      seed,
    );
    // Every row's values as the CPU form computes them (its probabilities zero outside the query rows).
    const pAll = new Float64Array(H * T * T);
    const pAbs = new Float64Array(H * T * T);
    for (let hh = 0; hh < H; hh++) pAll.set(pVals.subarray(hh * R * T, (hh + 1) * R * T), (hh * T + q0) * T);
    pAbs.set(pAll);
    const refC = attentionValuesF64(pAll, v.values, H, T, hd).subarray(q0 * H * hd);
    const absC = attentionValuesF64(pAbs, v.values.map(Math.abs), H, T, hd).subarray(q0 * H * hd);
    checkDf('ctx', await readDfH(h, ctx, R * H * hd), refC, (i) => (8 * T + 16) * U2 * absC[i], seed);
  });

  it.each([
    [1, 3, 0],
    [29, 2, 0],
    [29, 2, 17],
    [70, 1, 0],
    [70, 1, 69],
  ])('causal softmax T=%i H=%i, query rows from %i (df exp)', async (T, H, q0) => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const R = T - q0;
    const sc = randDf(rng, H * R * T, 3);
    // Right of each row's diagonal: huge values, which a softmax that reads them would turn into garbage.
    for (let r = 0; r < H * R; r++)
      for (let j = q0 + (r % R) + 1; j < T; j++) {
        sc.pairs[2 * (r * T + j)] = 1e30;
        sc.values[r * T + j] = Number.NEGATIVE_INFINITY; // what the CPU oracle's scores hold there
      }
    const p = poisonedDf(h, H * R * T);
    const none = h.upload(new Float32Array(4));
    const b = { q: none, k: none, v: none, scores: h.upload(sc.pairs), probs: p, ctx: none };
    const [, softmax] = dfGqaAttention('attn', b, { H, KV: H, T, hd: 1, q0, window: null }, FMA_OPTS);
    await h.run([softmax]);
    // The CPU form over whole [T, T] rows: each query row placed at its position, the rows before it unused.
    const full = new Float64Array(H * T * T).fill(Number.NEGATIVE_INFINITY);
    for (let hh = 0; hh < H; hh++) {
      for (let t = 0; t < q0; t++) full[(hh * T + t) * T] = 0;
      full.set(sc.values.subarray(hh * R * T, (hh + 1) * R * T), (hh * T + q0) * T);
    }
    const ref = queryRows(softmaxCausalF64(full, H, T), H, T, q0);
    const rowMax = (i: number) => {
      const r = Math.floor(i / T);
      let m = Number.NEGATIVE_INFINITY;
      for (let j = 0; j <= q0 + (r % R); j++) m = Math.max(m, sc.values[r * T + j]);
      return m;
    };
    // exp is good to ~1e-15 relative (df_math.wgsl); s − max carries u²·(|s| + |max|) absolute, which exp turns
    // into relative error; the row sum and the division add ~(T + 8)·3u² relative.
    const tol = (i: number) => {
      if (ref[i] === 0) return 0;
      const s = Math.abs(sc.values[i]);
      return ref[i] * (4e-15 + (8 * T + 64) * U2 * (1 + s + Math.abs(rowMax(i))));
    };
    checkDf('softmax', await readDfH(h, p, H * R * T), ref, tol, seed);
  });

  it('exact GELU (df erf) over the bulk and both tails', async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const x = randDf(rng, 3000, 2);
    const edges = [
      0,
      -Math.SQRT1_2,
      Math.SQRT1_2,
      -0.5,
      0.5,
      -3,
      3,
      -8.5,
      9.5,
      -12,
      12.9,
      14,
      -19.5,
      25,
      1e-20,
      -1e-20,
    ];
    edges.forEach((v, i) => {
      x.pairs[2 * i] = v;
      x.pairs[2 * i + 1] = 0;
      x.values[i] = Math.fround(v);
    });
    const y = poisonedDf(h, x.values.length);
    await h.run([dfGelu('gelu', { x: h.upload(x.pairs), y }, x.values.length, { constants: FMA })]);
    const ref = geluF64(x.values);
    // Measured on SwiftShader: up to 1.6e-14 relative in the left tail (x ≈ −1 … −3; the CPU oracle there is
    // within 6e-16 of a 40-digit erfc), ~1e-15 elsewhere: 5e-14 relative, 2^-126 absolute for results below
    // the normal f32 range (the far left tail). An f32-accurate GELU errs by ~1e-7.
    const tol = (i: number) => 5e-14 * Math.abs(ref[i]) + 2 ** -126;
    checkDf('gelu', await readDfH(h, y, x.values.length), ref, tol, seed);
  });

  it('residual adds in HF order', async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const n = 1001;
    const [a, b, c] = [randDf(rng, n), randDf(rng, n), randDf(rng, n)];
    const [o2, o3] = [poisonedDf(h, n), poisonedDf(h, n)];
    const [ab, bb, cb] = [h.upload(a.pairs), h.upload(b.pairs), h.upload(c.pairs)];
    await h.run([
      dfResidual('add2', { a: ab, b: bb, c: null, out: o2, dummy }, n, { constants: FMA }),
      dfResidual('add3', { a: ab, b: bb, c: cb, out: o3, dummy }, n, { constants: FMA }),
    ]);
    const tol = (i: number) =>
      8 * U2 * (Math.abs(a.values[i]) + Math.abs(b.values[i]) + Math.abs(c.values[i]));
    checkDf('a + b', await readDfH(h, o2, n), addF64(a.values, b.values), tol, seed);
    // add3F64(x, attn, mlp) = (mlp + attn) + x: here a = mlp, b = attn, c = x.
    checkDf('(a + b) + c', await readDfH(h, o3, n), add3F64(c.values, b.values, a.values), tol, seed);
  });
});
