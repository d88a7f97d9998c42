// The Llama family's df oracle kernels (RMSNorm and the per-head q/k norm, SwiGLU, the rotary over heads, the
// attention core with grouped-query heads and a sliding window; GPT-NeoX's rotary packed into one buffer) against the CPU fp64 forms, on fresh random inputs
// that use both halves of each df value, NaN-poisoned outputs and sizes off the workgroups (64/256). DF_FMA = false
// on SwiftShader (its fma is not fused). Replay with KERNEL_SEED=<seed>; DF_LLAMA_SEEDS=<n> runs n seeds a case.
//
// Tolerances, in u² = 2^-48 (u = 2^-24; one df add errs by ≤ 3u², df × f32 ≤ 2u², df × df ≤ 7u², div/sqrt ≤ 8u²,
// exp ≤ 10u² of the magnitudes combined: src/kernels/oracle/df-random-cases.ts): a sum of n terms errs by at most
// ~(7 + 3)·n·u²·Σ|terms|, bounded here with 8n + 16 (kernels.test.ts's bound); one f32 rounding anywhere (6e-8) is
// six orders above every bound.
import { afterAll, beforeAll, describe, it } from 'vitest';
import { toDfPairs } from '../../numeric/double-float';
import { mulberry32 } from '../../numeric/random';
import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from '../cpu/attention';
import { ropeHeadsF64, rotaryInvFreq, splitHeadsRotaryF64 } from '../cpu/rotary';
import { dfGqaAttention } from '../ops/attention';
import { dfRmsNorm, rmsNormF64 } from '../ops/rmsnorm';
import { dfRopeHeads, dfRotaryPacked, ropeTablesF64 } from '../ops/rotary';
import { dfSwiglu, swigluF64 } from '../ops/swiglu';
import { createHarness, freshSeed, type Harness } from '../testing';
import { checkDf, poisonedDf, randDf, readDfH } from './testing';

const U2 = 2 ** -48;
const FMA = { constants: { DF_FMA: false } };
const SEEDS = Number(process.env.DF_LLAMA_SEEDS ?? 1);

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

/** The case body once per seed: a fresh one, then the next SEEDS − 1 after it. */
async function eachSeed(body: (seed: number) => Promise<void>): Promise<void> {
  const first = freshSeed();
  for (let s = 0; s < SEEDS; s++) await body((first + s) >>> 0);
}

const hiOf = (pairs: Float32Array) => pairs.filter((_, i) => i % 2 === 0);

describe('Llama-family df kernels vs CPU fp64', () => {
  it.each([
    [1, 90, 1e-6],
    [29, 257, 1e-5],
    [39, 32, 1e-6], // Qwen3's q/k norm: rows = T · heads over head_dim
    [5, 7, 0.5], // an eps that matters
  ])('rmsnorm rows=%i d=%i eps=%f', (rows, d, eps) =>
    eachSeed(async (seed) => {
      const rng = mulberry32(seed);
      const x = randDf(rng, rows * d, 2);
      const w = hiOf(randDf(rng, d, 0.5).pairs).map((v) => v + 1);
      const y = poisonedDf(h, rows * d);
      await h.run([dfRmsNorm('rms', { x: h.upload(x.pairs), weight: h.upload(w), y }, rows, d, eps, FMA)]);
      const ref = rmsNormF64(x.values, rows, d, w, eps);
      // Σx² has positive terms: relative (8d + 16)u²; its root, the division and two products add a few u² each.
      checkDf(
        'rmsnorm',
        await readDfH(h, y, rows * d),
        ref,
        (i) => (8 * d + 64) * U2 * Math.abs(ref[i]),
        seed,
      );
    }),
  );

  it('swiglu over n = 1061, gates from −100 to 100', () =>
    eachSeed(async (seed) => {
      const rng = mulberry32(seed);
      const n = 1061;
      const gate = randDf(rng, n, 4);
      // A tail of large gates of both signs: e^g underflows past the df format for g < −69 (absolute bound below).
      for (let i = 0; i < 40; i++) {
        const g = Math.fround((rng() < 0.5 ? -1 : 1) * (40 + 60 * rng()));
        gate.pairs[2 * i] = g;
        gate.pairs[2 * i + 1] = 0;
        gate.values[i] = g;
      }
      const up = randDf(rng, n, 2);
      const y = poisonedDf(h, n);
      await h.run([dfSwiglu('swiglu', { gate: h.upload(gate.pairs), up: h.upload(up.pairs), y }, n, FMA)]);
      const ref = swigluF64(gate.values, up.values);
      // exp 10u², the add 3u², the division 8u², two products 14u²: 64u² of the result; below e^g ≈ 2^-100 the lo
      // part of e^g is flushed: an absolute 2^-125 · |g · up| ≤ 2^-110 for these sizes.
      checkDf('swiglu', await readDfH(h, y, n), ref, (i) => 64 * U2 * Math.abs(ref[i]) + 2 ** -110, seed);
    }));

  it.each([
    [13, 3, 18, 18, 'default'],
    [29, 2, 64, 64, 'llama3'],
    [7, 5, 32, 32, 'linear'],
    [11, 2, 20, 12, 'default'], // a partial rotation: the kernel's general form
    [9, 3, 16, 0, 'default'], // the head split alone (v)
  ] as const)('rope heads T=%i heads=%i hd=%i r=%i (%s)', (T, heads, hd, r, scaling) =>
    eachSeed(async (seed) => {
      const rng = mulberry32(seed);
      const scale =
        scaling === 'llama3'
          ? ({
              type: 'llama3',
              factor: 8,
              lowFreqFactor: 1,
              highFreqFactor: 4,
              originalMaxPositionEmbeddings: 64,
            } as const)
          : scaling === 'linear'
            ? ({ type: 'linear', factor: 2.5 } as const)
            : null;
      const inv = r === 0 ? new Float64Array(0) : rotaryInvFreq(r, 5e5, 'exact', scale);
      const x = randDf(rng, T * heads * hd);
      const t = ropeTablesF64(T, inv);
      const out = poisonedDf(h, heads * T * hd);
      const b = {
        x: h.upload(x.pairs),
        cos: h.upload(toDfPairs(t.cos)),
        sin: h.upload(toDfPairs(t.sin)),
        out,
      };
      await h.run([dfRopeHeads('rope', b, T, heads, hd, r, FMA)]);
      const ref = ropeHeadsF64(x.values, T, heads, hd, inv);
      // The tables' pairs are the doubles to u²; two df products and a df add: 16u² of |x1| + |x2|; copies exact.
      const half = r / 2;
      const tol = (i: number) => {
        const e = i % hd;
        const tt = Math.floor(i / hd) % T;
        const hh = Math.floor(i / (T * hd));
        if (e >= r) return 0;
        const src = (tt * heads + hh) * hd;
        const partner = e < half ? e + half : e - half;
        return 16 * U2 * (Math.abs(x.values[src + e]) + Math.abs(x.values[src + partner]));
      };
      checkDf('rope heads', await readDfH(h, out, heads * T * hd), ref, tol, seed);
    }),
  );

  it.each([
    [13, 3, 12, 12],
    [7, 2, 20, 10], // partial rotation (GPT-NeoX's rotary_pct)
    [9, 1, 8, 0],
  ])('GPT-NeoX rotary packed T=%i H=%i hd=%i r=%i', (T, H, hd, r) =>
    eachSeed(async (seed) => {
      const rng = mulberry32(seed);
      const base = 10000;
      const qkv = randDf(rng, T * H * 3 * hd);
      const t = ropeTablesF64(T, rotaryInvFreq(r, base));
      const n = H * T * hd;
      const out = poisonedDf(h, 3 * n);
      const b = {
        qkv: h.upload(qkv.pairs),
        cos: h.upload(toDfPairs(t.cos)),
        sin: h.upload(toDfPairs(t.sin)),
        out,
      };
      await h.run([dfRotaryPacked('rotary', b, T, H, hd, r, FMA)]);
      const ref = splitHeadsRotaryF64(qkv.values, T, H, hd, r, base);
      const want = new Float64Array(3 * n);
      want.set(ref.q, 0);
      want.set(ref.k, n);
      want.set(ref.v, 2 * n);
      // As rope heads: 16u² of the two values combined where rotated, exact copies elsewhere (v whole).
      const tol = (i: number) => {
        if (i >= 2 * n) return 0;
        const j = i % n;
        const e = j % hd;
        if (e >= r) return 0;
        const tt = Math.floor(j / hd) % T;
        const hh = Math.floor(j / (T * hd));
        const src = (tt * H + hh) * 3 * hd + (i >= n ? hd : 0);
        const partner = e < r / 2 ? e + r / 2 : e - r / 2;
        return 16 * U2 * (Math.abs(qkv.values[src + e]) + Math.abs(qkv.values[src + partner]));
      };
      checkDf('rotary packed', await readDfH(h, out, 3 * n), want, tol, seed);
    }),
  );

  it.each([
    [6, 2, 13, 12, null],
    [4, 1, 29, 18, 5], // MQA with a window
    [4, 4, 7, 32, null], // plain multi-head
    [6, 3, 70, 16, 6],
    [2, 1, 17, 8, 1], // a window of one key: the row itself
    [3, 1, 9, 10, 40], // a window past T: causal alone
  ] as const)('attention H=%i KV=%i T=%i hd=%i window=%s', (H, KV, T, hd, window) =>
    eachSeed(async (seed) => {
      const rng = mulberry32(seed);
      const q = randDf(rng, H * T * hd);
      const k = randDf(rng, KV * T * hd);
      const v = randDf(rng, KV * T * hd);
      const [scores, probs, ctx] = [
        poisonedDf(h, H * T * T),
        poisonedDf(h, H * T * T),
        poisonedDf(h, T * H * hd),
      ];
      const b = { q: h.upload(q.pairs), k: h.upload(k.pairs), v: h.upload(v.pairs), scores, probs, ctx };
      await h.run(dfGqaAttention('attn', b, { H, KV, T, hd, window }, FMA));
      const variant = { kvHeads: KV, window };
      const s = attentionScoresF64(q.values, k.values, H, T, hd, variant);
      const p = softmaxCausalF64(s, H, T, variant);
      const ref = attentionValuesF64(p, v.values, H, T, hd, variant);
      // A score errs by ≤ (8hd + 16)u²·Σ|q_e k_e|/√hd; e^(s − max) turns twice the row's worst score error into a
      // relative error of each probability, plus (8T + 64)u² for the exp, the sum and the division.
      const g = H / KV;
      const rowErr = new Float64Array(H * T);
      for (let hh = 0; hh < H; hh++)
        for (let i = 0; i < T; i++) {
          let worst = 0;
          for (let j = 0; j <= i; j++) {
            let a = 0;
            for (let e = 0; e < hd; e++)
              a += Math.abs(
                q.values[(hh * T + i) * hd + e] * k.values[(Math.floor(hh / g) * T + j) * hd + e],
              );
            worst = Math.max(worst, ((8 * hd + 16) * U2 * a) / Math.sqrt(hd));
          }
          rowErr[hh * T + i] = 4 * worst + (8 * T + 64) * U2;
        }
      const pTol = (idx: number) => Math.abs(p[idx]) * rowErr[Math.floor(idx / T)];
      const sRef = s.map((x) => (Number.isFinite(x) ? x : 0)); // masked scores are 0 in the df buffer
      checkDf('probs', await readDfH(h, probs, H * T * T), p, pTol, seed);
      const sTol = (idx: number) =>
        (rowErr[Math.floor(idx / T)] - (8 * T + 64) * U2) / 4 + 8 * U2 * Math.abs(sRef[idx]);
      checkDf('scores', await readDfH(h, scores, H * T * T), sRef, sTol, seed);
      const ctxTol = (idx: number) => {
        const e = idx % hd;
        const hh = Math.floor(idx / hd) % H;
        const i = Math.floor(idx / (H * hd));
        let m = 0;
        for (let j = 0; j <= i; j++)
          m += p[(hh * T + i) * T + j] * Math.abs(v.values[(Math.floor(hh / g) * T + j) * hd + e]);
        return m * (rowErr[hh * T + i] + (8 * T + 16) * U2);
      };
      checkDf('ctx', await readDfH(h, ctx, T * H * hd), ref, ctxTol, seed);
    }),
  );
});
