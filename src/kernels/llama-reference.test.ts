// The Llama family's reference kernels (RMSNorm, SwiGLU, the per-part rotary with an inv_freq table, GQA / MQA and
// the sliding window in the three attention kernels) against the fp64 oracles of src/kernels/cpu/, on fresh random
// inputs (a failure prints the seed; replay with KERNEL_SEED=<seed>), outputs poisoned with NaN and followed by a
// guard band that must come back unchanged, sizes that are not multiples of the tiles (TILE 16, WG 128/256).
// Tolerances are derived per kernel in the comments.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32, randn } from '../numeric/random';
import { attnScores, attnShapeConstants, attnValues, softmaxCausal } from './attention';
import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from './cpu/attention';
import { ropeHeadsF64 } from './cpu/rotary';
import { type RopeScaling, rotaryInvFreq } from './cpu/rotary-angles';
import { expectClose, guardedOutputs, roundLabel, SWEEP_ROUNDS } from './guarded.testdata';
import { rmsNorm, rmsNormF64 } from './ops/rmsnorm';
import { swiglu, swigluF64 } from './ops/swiglu';
import { ropeHeads, ropeTables } from './rope';
import { createHarness, dotBound, freshSeed, type Harness, U32 } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());
const { guarded, readGuarded } = guardedOutputs(() => h, 67, 1234.5);

const llama31: RopeScaling = {
  type: 'llama3',
  factor: 8,
  lowFreqFactor: 1,
  highFreqFactor: 4,
  originalMaxPositionEmbeddings: 64, // small, so that positions up to 129 cross all three bands
};

for (let r = 0; r < SWEEP_ROUNDS; r++)
  describe(`Llama-family reference kernels vs fp64 oracles${roundLabel(r)}`, () => {
    // [rows, d]: the hidden size 90 at T in {1, 24, 129}; q/k norms over heads (rows = T · heads, d = head_dim 37).
    it.each([
      [1, 90],
      [24, 90],
      [129, 90],
      [129 * 3, 37],
      [5, 300],
    ])('rmsnorm rows=%i d=%i', async (rows, d) => {
      const seed = freshSeed();
      const rng = mulberry32(seed);
      const x = randn(rng, rows * d, 3).map((v) => v + 2); // an offset mean: RMSNorm keeps it
      const w = randn(rng, d).map((v) => 1 + 0.3 * v);
      const eps = 1e-6;
      const y = guarded(rows * d);
      await h.run([rmsNorm('rms', { x: h.upload(x), weight: h.upload(w), y }, rows, d, eps)]);
      const ref = rmsNormF64(x, rows, d, w, eps);
      // The sum of d squares (all >= 0) is within γ_d relative, halved by the root; /d, + eps, sqrt and 1/ add 4u;
      // x · inv and · w one u each: |err| <= (d/2 + 8)·u·|ref| (the tree sum's depth is far below d).
      expectClose(
        'rmsnorm',
        await readGuarded('rmsnorm', y, rows * d, seed),
        ref,
        (i) => (d / 2 + 8) * U32 * Math.abs(ref[i]) + 1e-30,
        seed,
      );
    });

    it('swiglu: silu(gate) · up over a wide range, both tails and the overflow of e^-x included', async () => {
      const seed = freshSeed();
      const rng = mulberry32(seed);
      const n = 4099;
      const gate = randn(rng, n, 4);
      const up = randn(rng, n, 1.5);
      gate.set([0, -1e-8, 12, -12, 88, -87, -100, 100, 40, -40]);
      const y = guarded(n);
      await h.run([swiglu('swiglu', { gate: h.upload(gate), up: h.upload(up), y }, n)]);
      const ref = swigluF64(gate, up);
      // e^-x is within (3 + 2|x|) ulp in WGSL; 1 + e, the division, the stored silu and the product one u each:
      // |err| <= (8 + 2|x|)·u·|ref|, and an absolute 1e-30 where the result underflows (x = -100: -0 vs -4e-42).
      expectClose(
        'swiglu',
        await readGuarded('swiglu', y, n, seed),
        ref,
        (i) => (8 + 2 * Math.abs(gate[i])) * U32 * Math.abs(ref[i]) + 1e-30,
        seed,
      );
    });

    // [T, heads, hd, r, scaling]: Llama's whole-head rotary with theta 500000 and llama3 scaling, a linear scaling,
    // a partial rotary and an odd head_dim.
    const ropeCases: Array<[number, number, number, number, RopeScaling | null]> = [
      [24, 3, 30, 30, llama31],
      [129, 2, 64, 64, llama31],
      [17, 5, 48, 48, { type: 'linear', factor: 4 }],
      [13, 2, 37, 20, null],
    ];
    it.each(ropeCases)(
      'rope T=%i heads=%i hd=%i r=%i (%j), from a concatenated [q; k; v] row and alone',
      async (T, heads, hd, r, scaling) => {
        const seed = freshSeed();
        const rng = mulberry32(seed);
        const kvHeads = 1;
        const width = (heads + 2 * kvHeads) * hd; // [q heads; k head; v head]
        const qkv = randn(rng, T * width, 2);
        const inv = rotaryInvFreq(r, 500000, 'exact', scaling);
        const { cos, sin } = ropeTables(T, inv);
        const tables = { cos: h.upload(cos), sin: h.upload(sin) };
        const x = h.upload(qkv);
        const q = guarded(heads * T * hd);
        const k = guarded(kvHeads * T * hd);
        const v = guarded(kvHeads * T * hd);
        const qAlone = new Float32Array(T * heads * hd);
        for (let t = 0; t < T; t++)
          qAlone.set(qkv.subarray(t * width, t * width + heads * hd), t * heads * hd);
        const q2 = guarded(heads * T * hd);
        await h.run([
          ropeHeads('q', { x, ...tables, out: q }, T, heads, hd, r, {}, { stride: width, off: 0 }),
          ropeHeads('k', { x, ...tables, out: k }, T, kvHeads, hd, r, {}, { stride: width, off: heads * hd }),
          ropeHeads(
            'v',
            { x, ...tables, out: v },
            T,
            kvHeads,
            hd,
            0,
            {},
            { stride: width, off: (heads + kvHeads) * hd },
          ),
          ropeHeads('q alone', { x: h.upload(qAlone), ...tables, out: q2 }, T, heads, hd, r),
        ]);
        const part = (off: number, n: number) => {
          const out = new Float64Array(T * n * hd);
          for (let t = 0; t < T; t++)
            for (let c = 0; c < n * hd; c++) out[t * n * hd + c] = qkv[t * width + off + c];
          return out;
        };
        const qRef = ropeHeadsF64(part(0, heads), T, heads, hd, inv);
        const kRef = ropeHeadsF64(part(heads * hd, kvHeads), T, kvHeads, hd, inv);
        const vRef = ropeHeadsF64(part((heads + kvHeads) * hd, kvHeads), T, kvHeads, hd, []);
        // cos/sin are rounded to f32 once (|δ| <= u each) and out = a·c ∓ b·s takes 3 more roundings:
        // |err| <= 4u·(|a| + |b|) <= 8u·max|x|.
        const tol = 8 * U32 * Math.max(...Array.from(qkv, Math.abs));
        const qGot = await readGuarded('q', q, heads * T * hd, seed);
        expectClose('q', qGot, qRef, tol, seed);
        expectClose('k', await readGuarded('k', k, T * hd, seed), kRef, tol, seed);
        expectClose('v', await readGuarded('v', v, T * hd, seed), vRef, 0, seed);
        expectClose(
          'q alone = q from the concatenated row',
          await readGuarded('q2', q2, heads * T * hd, seed),
          qGot,
          0,
          seed,
        );
      },
    );

    it('rope refuses a part that does not fit its rows and an odd rotary width', () => {
      const b = {
        x: h.upload(new Float32Array(4)),
        cos: h.upload(new Float32Array(4)),
        sin: h.upload(new Float32Array(4)),
        out: h.upload(new Float32Array(4)),
      };
      expect(() => ropeHeads('k', b, 2, 2, 8, 8, {}, { stride: 24, off: 16 })).toThrow(
        /do not fit rows of 24/,
      );
      expect(() => ropeHeads('q', b, 2, 2, 8, 7)).toThrow(/rotary dims 7/);
    });

    // [T, H, kvHeads, hd, window]: GQA 3:1, MQA with a window, GQA 2:1 with a narrow window, MHA with window 1, a
    // window as wide as the sequence (no effect), and one row.
    const attnCases: Array<[number, number, number, number, number | null]> = [
      [24, 6, 2, 30, null],
      [129, 4, 1, 37, 17],
      [23, 8, 4, 20, 5],
      [17, 2, 2, 16, 1],
      [40, 6, 3, 64, 40],
      [1, 3, 1, 24, 3],
    ];
    it.each(
      attnCases.flatMap(
        (c) =>
          [
            [...c, false],
            [...c, true],
          ] as Array<[number, number, number, number, number | null, boolean]>,
      ),
    )('attention T=%i H=%i kvHeads=%i hd=%i window=%s PLAIN=%s', async (T, H, kvHeads, hd, window, plain) => {
      const seed = freshSeed();
      const rng = mulberry32(seed);
      const qa = randn(rng, H * T * hd);
      const ka = randn(rng, kvHeads * T * hd);
      const va = randn(rng, kvHeads * T * hd);
      const s = guarded(H * T * T);
      const p = guarded(H * T * T);
      const ctx = guarded(T * H * hd);
      const c = attnShapeConstants('attn', { H, kvHeads, window });
      const P: Record<string, boolean> = plain ? { PLAIN: true } : {};
      await h.run([
        attnScores('scores', { q: h.upload(qa), k: h.upload(ka), s }, H, T, hd, {
          constants: { ...c.scores, ...P },
        }),
        softmaxCausal('probs', { s, p }, H, T, { constants: { ...c.softmax, ...P } }),
        attnValues('ctx', { p, v: h.upload(va), ctx }, H, T, hd, { constants: { ...c.values, ...P } }),
      ]);
      const opts = { kvHeads, window };
      const sRef = attentionScoresF64(qa, ka, H, T, hd, opts);
      const sAbs = attentionScoresF64(qa.map(Math.abs), ka.map(Math.abs), H, T, hd, opts);
      const sGot = await readGuarded('scores', s, H * T * T, seed);
      // Masked scores are written 0 (the softmax never reads them); the others as in reference.test.ts: γ_{hd+2}.
      expectClose(
        'scores',
        sGot,
        sRef.map((x) => (Number.isFinite(x) ? x : 0)),
        (i) => (Number.isFinite(sAbs[i]) ? dotBound(hd + 2, sAbs[i]) / Math.sqrt(hd) : 0) + 1e-30,
        seed,
      );
      // The softmax of the GPU's own scores with the oracle's mask: exp within (3 + 2|x|) ulp, the row sum γ_T.
      const pRef = softmaxCausalF64(
        Float64Array.from(sGot, (x, i) => (Number.isFinite(sRef[i]) ? x : Number.NEGATIVE_INFINITY)),
        H,
        T,
        opts,
      );
      const pGot = await readGuarded('probs', p, H * T * T, seed);
      expectClose('probs', pGot, pRef, (i) => (T + 60) * U32 * Math.abs(pRef[i]) + 1e-9, seed);
      // Values from the GPU's probabilities: a T-term dot product per output, over the right KV head.
      const cRef = attentionValuesF64(pGot, va, H, T, hd, opts);
      const cAbs = attentionValuesF64(pGot, va.map(Math.abs), H, T, hd, opts);
      expectClose(
        'ctx',
        await readGuarded('ctx', ctx, T * H * hd, seed),
        cRef,
        (i) => dotBound(T + 1, cAbs[i]) + 1e-30,
        seed,
      );
    });

    it('GQA + window decoding: rows at positions p0.. of a cache give the whole forward rows, bit for bit', async () => {
      const seed = freshSeed();
      const rng = mulberry32(seed);
      const [T, H, kvHeads, hd, window, p0] = [21, 4, 2, 18, 6, 17];
      const qa = randn(rng, H * T * hd);
      const ka = randn(rng, kvHeads * T * hd);
      const va = randn(rng, kvHeads * T * hd);
      const c = attnShapeConstants('attn', { H, kvHeads, window });
      const [kb, vb] = [h.upload(ka), h.upload(va)];
      const run = async (Tq: number, q: Float32Array, at?: { p0: number; rows: number }) => {
        const Tk = (at?.p0 ?? 0) + Tq;
        const s = guarded(H * Tq * Tk);
        const p = guarded(H * Tq * Tk);
        const ctx = guarded(Tq * H * hd);
        await h.run([
          attnScores('scores', { q: h.upload(q), k: kb, s }, H, Tq, hd, { constants: c.scores }, at),
          softmaxCausal('probs', { s, p }, H, Tq, { constants: c.softmax }, at),
          attnValues('ctx', { p, v: vb, ctx }, H, Tq, hd, { constants: c.values }, at),
        ]);
        return readGuarded('ctx', ctx, Tq * H * hd, seed);
      };
      const whole = await run(T, qa);
      const qTail = new Float32Array(H * (T - p0) * hd); // [H, T - p0, hd]
      for (let hh = 0; hh < H; hh++)
        qTail.set(qa.subarray((hh * T + p0) * hd, (hh * T + T) * hd), hh * (T - p0) * hd);
      const tail = await run(T - p0, qTail, { p0, rows: T });
      expectClose('decoded rows', tail, whole.subarray(p0 * H * hd), 0, seed);
    });

    it('a head count that does not group, or a negative window, is refused', () => {
      expect(() => attnShapeConstants('attn', { H: 6, kvHeads: 4 })).toThrow(
        /6 query heads cannot be grouped over 4/,
      );
      expect(() => attnShapeConstants('attn', { H: 4, kvHeads: 2, window: -1 })).toThrow(/sliding window -1/);
      expect(attnShapeConstants('attn', { H: 4, kvHeads: 4 })).toEqual({
        scores: {},
        softmax: {},
        values: {},
        flash: {},
      });
      expect(attnShapeConstants('attn', { H: 6, kvHeads: 2, window: 5 })).toEqual({
        scores: { KV_GROUP: 3, WINDOW: 5 },
        softmax: { WINDOW: 5 },
        values: { KV_GROUP: 3 },
        flash: { KV_GROUP: 3, WINDOW: 5 },
      });
    });
  });
