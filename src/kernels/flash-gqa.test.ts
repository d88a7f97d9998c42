// Grouped-query attention and the sliding window in the fused flash attention (KV_GROUP, WINDOW; the Llama family)
// against the UNFUSED fp64 oracles run in sequence (scores → softmax → values with kvHeads and window), on fresh
// random inputs (seed printed; KERNEL_SEED=<seed> replays; KERNEL_SWEEP=n runs n seeds), a NaN-poisoned ctx with a
// guard band, T and hd multiples of no tile, one and two passes over the output dims; decoded rows bit for bit;
// the teaching fault FAULT_KV_INTERLEAVED against its own oracle (the mapping h % kvHeads).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32, randn } from '../numeric/random';
import { attnShapeConstants } from './attention';
import {
  attentionScoresF64,
  attentionValuesF64,
  firstKey,
  type ScoresVariant,
  softmaxCausalF64,
} from './cpu/attention';
import { FLASH_KEY_CHUNK, flashAttention, flashTiles } from './flash-attention';
import { compare, createHarness, dotBound, freshSeed, type Harness, U32 } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

const ROUNDS = Number(process.env.KERNEL_SWEEP ?? 1);
const round = (r: number) => (ROUNDS > 1 ? ` (round ${r})` : '');
const GUARD = 59;
const SENTINEL = 4242.5;

async function runFlash(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  H: number,
  T: number,
  hd: number,
  constants: Record<string, number | boolean>,
  seed: number,
  at?: { p0: number; rows: number },
): Promise<Float32Array> {
  const n = T * H * hd;
  const init = new Float32Array(n + GUARD).fill(Number.NaN);
  init.fill(SENTINEL, n);
  const ctx = h.upload(init);
  await h.run([
    flashAttention(
      'attn',
      { q: h.upload(q), k: h.upload(k), v: h.upload(v), ctx },
      H,
      T,
      hd,
      { constants },
      at,
    ),
  ]);
  const all = await h.read(ctx, n + GUARD);
  const hit = all.subarray(n).findIndex((x) => x !== SENTINEL);
  expect(hit, `ctx (seed ${seed}): written past its end at +${hit}`).toBe(-1);
  return all.slice(0, n);
}

/**
 * The bound of custom/tolerances.ts flashTol (derived there) over the keys a row sees: per row, A = the largest
 * Σ|q·k| / sqrt(hd) and X = the range of its visible scores, |err| <= [4γ_{hd+2}A + 2(4 + 2X)u + 2γ_{adds}]·Σ p|v|.
 */
function flashBound(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  H: number,
  T: number,
  hd: number,
  opts: ScoresVariant,
) {
  const { BK } = flashTiles(hd);
  const s = attentionScoresF64(q, k, H, T, hd, opts);
  const p = softmaxCausalF64(s, H, T, opts);
  const ctx = attentionValuesF64(p, v, H, T, hd, opts);
  const pAbsV = attentionValuesF64(p, v.map(Math.abs), H, T, hd, opts);
  const sAbs = attentionScoresF64(q.map(Math.abs), k.map(Math.abs), H, T, hd, opts);
  const factor = new Float64Array(H * T);
  for (let r = 0; r < H * T; r++) {
    const i = r % T;
    let [A, m, lo] = [0, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY];
    for (let j = firstKey(i, opts); j <= i; j++) {
      A = Math.max(A, sAbs[r * T + j]);
      m = Math.max(m, s[r * T + j]);
      lo = Math.min(lo, s[r * T + j]);
    }
    const adds = T + T / FLASH_KEY_CHUNK + (3 * BK) / FLASH_KEY_CHUNK + 2;
    factor[r] = 4 * dotBound(hd + 2, A) + 2 * (4 + 2 * (m - lo)) * U32 + 2 * dotBound(adds, 1);
  }
  const d = H * hd;
  const tol = (idx: number) =>
    factor[Math.floor((idx % d) / hd) * T + Math.floor(idx / d)] * pAbsV[idx] + 1e-30;
  return { ctx, tol };
}

for (let r = 0; r < ROUNDS; r++)
  describe(`flash attention with GQA / MQA and a sliding window${round(r)}`, () => {
    // [T, H, kvHeads, hd, window]: GQA 3:1, MQA + window, GQA 2:1 + a window shorter than a key chunk, a two-pass
    // head (hd 130) with GQA 2:1 and a window, one row.
    const cases: Array<[number, number, number, number, number | null]> = [
      [37, 6, 2, 64, null],
      [70, 4, 1, 80, 9],
      [29, 8, 4, 37, 5],
      [45, 4, 2, 130, 16],
      [1, 4, 2, 32, 3],
    ];
    it.each(cases)(
      'T=%i H=%i kvHeads=%i hd=%i window=%s vs the fp64 chain',
      async (T, H, kvHeads, hd, window) => {
        const seed = freshSeed();
        const rng = mulberry32(seed);
        const q = randn(rng, H * T * hd);
        const k = randn(rng, kvHeads * T * hd);
        const v = randn(rng, kvHeads * T * hd);
        const got = await runFlash(
          q,
          k,
          v,
          H,
          T,
          hd,
          attnShapeConstants('attn', { H, kvHeads, window }).flash,
          seed,
        );
        const { ctx, tol } = flashBound(q, k, v, H, T, hd, { kvHeads, window });
        const res = compare('ctx', got, ctx, tol, seed);
        expect(res.ok, res.report).toBe(true);
      },
    );

    it('decoded rows (positions p0.. of a cache) equal the whole forward rows, bit for bit (GQA + window)', async () => {
      const seed = freshSeed();
      const rng = mulberry32(seed);
      const [T, H, kvHeads, hd, window, p0] = [41, 6, 3, 48, 11, 36];
      const q = randn(rng, H * T * hd);
      const k = randn(rng, kvHeads * T * hd);
      const v = randn(rng, kvHeads * T * hd);
      const c = attnShapeConstants('attn', { H, kvHeads, window }).flash;
      const whole = await runFlash(q, k, v, H, T, hd, c, seed);
      const qTail = new Float32Array(H * (T - p0) * hd);
      for (let hh = 0; hh < H; hh++)
        qTail.set(q.subarray((hh * T + p0) * hd, (hh + 1) * T * hd), hh * (T - p0) * hd);
      const tail = await runFlash(qTail, k, v, H, T - p0, hd, c, seed, { p0, rows: T });
      const res = compare('decoded rows', tail, whole.subarray(p0 * H * hd), 0, seed);
      expect(res.ok, res.report).toBe(true);
    });

    it('FAULT_KV_INTERLEAVED reads KV head h % kvHeads: its own oracle, and visibly not the model', async () => {
      const seed = freshSeed();
      const rng = mulberry32(seed);
      const [T, H, kvHeads, hd] = [19, 6, 2, 24];
      const q = randn(rng, H * T * hd);
      const k = randn(rng, kvHeads * T * hd);
      const v = randn(rng, kvHeads * T * hd);
      const c = { ...attnShapeConstants('attn', { H, kvHeads }).flash, FAULT_KV_INTERLEAVED: true };
      const got = await runFlash(q, k, v, H, T, hd, c, seed);
      const kvMap = Array.from({ length: H }, (_, hh) => hh % kvHeads);
      const wrong = flashBound(q, k, v, H, T, hd, { kvHeads, kvMap });
      const res = compare('ctx (interleaved)', got, wrong.ctx, wrong.tol, seed);
      expect(res.ok, res.report).toBe(true);
      // repeat_kv maps heads 0..5 to 0,0,0,1,1,1 and the fault to 0,1,0,1,0,1: heads 1 and 4 read the other KV head
      // (every element of theirs moves), heads 0, 2, 3 and 5 are right.
      const model = flashBound(q, k, v, H, T, hd, { kvHeads });
      const d = H * hd;
      const moved = (hh: number) => {
        const idx = Array.from({ length: T * hd }, (_, n) => Math.floor(n / hd) * d + hh * hd + (n % hd));
        const g = Float32Array.from(idx, (i) => got[i]);
        return compare(
          `head ${hh} vs the model`,
          g,
          idx.map((i) => model.ctx[i]),
          (n) => model.tol(idx[n]),
          seed,
        );
      };
      for (const hh of [0, 2, 3, 5]) expect(moved(hh).ok, moved(hh).report).toBe(true);
      for (const hh of [1, 4])
        expect(moved(hh).bad, `head ${hh} (seed ${seed})`).toBeGreaterThan(0.9 * T * hd);
    });
  });
