// The Llama family's fused q/k/v projection + head split + rotary (shaders/fused/qkv_rope.wgsl) against the UNFUSED
// fp64 oracles in sequence (linearF64 for q, k and v, then ropeHeadsF64 with the model's inv_freq), on fresh random
// inputs (seed printed; KERNEL_SEED replays, KERNEL_SWEEP=n runs n seeds), NaN-poisoned outputs with a guard band,
// shapes that are multiples of no tile (odd head dims, GQA and MQA), every GEMM core, decoded rows bit for bit, and
// its teaching fault (GPT-J pairs) against its own oracle.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32, randn } from '../numeric/random';
import type { RopeScaling } from '../numeric/types';
import { linearF64 } from './cpu/linear';
import { ropeHeadsF64 } from './cpu/rotary';
import { rotaryInvFreq } from './cpu/rotary-angles';
import type { GemmOpts } from './fused-linear';
import { qkvRopeOps } from './fused-llama';
import { CPU_ADAPTER, UNKNOWN_ADAPTER } from './gemm-configs';
import { guardedOutputs, roundLabel, SWEEP_ROUNDS } from './guarded.testdata';
import { ropeTables } from './rope';
import { compare, createHarness, dotBound, freshSeed, type Harness, U32 } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());
const { guarded, readGuarded } = guardedOutputs(() => h, 53, 99.125);

interface Shape {
  T: number;
  K: number;
  H: number;
  KV: number;
  hd: number;
  r: number;
}

const llama3: RopeScaling = {
  type: 'llama3',
  factor: 8,
  lowFreqFactor: 1,
  highFreqFactor: 4,
  originalMaxPositionEmbeddings: 32,
};

function qkvCase(seed: number, s: Shape, bias: boolean) {
  const rng = mulberry32(seed);
  const rows = (s.H + 2 * s.KV) * s.hd;
  const x = randn(rng, s.T * s.K);
  const w = randn(rng, rows * s.K, 1 / Math.sqrt(s.K));
  const b = bias ? randn(rng, rows, 0.3) : null;
  const inv = rotaryInvFreq(s.r, 500000, 'exact', llama3);
  return { x, w, b, inv };
}

/**
 * The oracle and the bound: the projections Y (fp64) carry |ε| <= E = γ_{K+2+splits}·Σ|x w| (+|b|); the rotation
 * y0·c − y1·s with c, s rounded to f32 once and three more roundings adds 4u(|Y0| + |Y1| + E0 + E1). An element
 * outside the rotary dims carries E and its one rounding. Returns per part (q, k, v) the oracle [heads, T, hd] and
 * its per-element bound.
 */
function oracle(c: ReturnType<typeof qkvCase>, s: Shape, splits: number, gptj = false) {
  const rows = (s.H + 2 * s.KV) * s.hd;
  const Y = linearF64(c.x, s.T, s.K, c.w, c.b, rows); // [T, rows]
  const absY = linearF64(c.x.map(Math.abs), s.T, s.K, c.w.map(Math.abs), c.b?.map(Math.abs) ?? null, rows);
  const part = (off: number, heads: number, a: Float64Array) => {
    const out = new Float64Array(s.T * heads * s.hd);
    for (let t = 0; t < s.T; t++)
      for (let j = 0; j < heads * s.hd; j++) out[t * heads * s.hd + j] = a[t * rows + off * s.hd + j];
    return out;
  };
  const half = s.r / 2;
  const partner = (e: number) => (gptj ? e ^ 1 : e < half ? e + half : e - half);
  const one = (off: number, heads: number, rotate: boolean) => {
    const y = part(off, heads, Y);
    const ay = part(off, heads, absY);
    const ref = ropeHeadsF64(y, s.T, heads, s.hd, rotate ? c.inv : [], 'exact', { gptj });
    const E = (i: number) => dotBound(s.K + 2 + splits, ay[i]);
    const tol = new Float64Array(ref.length);
    for (let hh = 0; hh < heads; hh++)
      for (let t = 0; t < s.T; t++)
        for (let e = 0; e < s.hd; e++) {
          const i = (t * heads + hh) * s.hd; // the row's head in y
          const at = (hh * s.T + t) * s.hd + e;
          if (rotate && e < s.r) {
            const p = partner(e);
            tol[at] =
              E(i + e) + E(i + p) + 4 * U32 * (Math.abs(y[i + e]) + Math.abs(y[i + p]) + E(i + e) + E(i + p));
          } else tol[at] = E(i + e) + U32 * Math.abs(y[i + e]);
        }
    return { ref, tol };
  };
  return { q: one(0, s.H, true), k: one(s.H, s.KV, true), v: one(s.H + s.KV, s.KV, false) };
}

for (let rr = 0; rr < SWEEP_ROUNDS; rr++)
  describe(`fused q/k/v + rotary (Llama family) vs linearF64 → ropeHeadsF64${roundLabel(rr)}`, () => {
    const workspace = (floats: number) => h.poisoned(floats);
    const cores: Array<[string, GemmOpts, number]> = [
      ['tiled', { policy: UNKNOWN_ADAPTER }, 1],
      ['barrier-free', { policy: CPU_ADAPTER }, 1],
      ['split-K 64', { policy: UNKNOWN_ADAPTER, workspace, kChunk: 64 }, 3],
      ['GEMV', { policy: { ...UNKNOWN_ADAPTER, gemvRows: 4 } }, 1],
    ];
    // [T, K, H, KV, hd, r, bias]: GQA 3:1 with whole-head rotary, MQA with an odd head_dim and partial rotary, MHA.
    const shapes: Array<[number, number, number, number, number, number, boolean]> = [
      [24, 90, 6, 2, 16, 16, true],
      [3, 131, 5, 1, 13, 8, false],
      [37, 72, 3, 3, 22, 22, true],
    ];
    it.each(cores.flatMap(([n, o, sp]) => shapes.map((x) => [n, ...x, o, sp] as const)))(
      '%s: T=%i K=%i H=%i KV=%i hd=%i r=%i bias=%s',
      async (_n, T, K, H, KV, hd, r, bias, opts, splits) => {
        const seed = freshSeed();
        const s = { T, K, H, KV, hd, r };
        const c = qkvCase(seed, s, bias);
        const { cos, sin } = ropeTables(T, c.inv);
        const [q, k, v] = [guarded(H * T * hd), guarded(KV * T * hd), guarded(KV * T * hd)];
        const dummy = h.upload(new Float32Array(4));
        const buf = {
          x: h.upload(c.x),
          w: h.upload(c.w),
          b: c.b ? h.upload(c.b) : null,
          cos: h.upload(cos),
          sin: h.upload(sin),
          q,
          k,
          v,
          dummy,
        };
        await h.run(qkvRopeOps('qkv', buf, s, opts));
        const o = oracle(c, s, Math.max(splits, Math.ceil(K / 64)));
        for (const [name, got, part] of [
          ['q', q, o.q],
          ['k', k, o.k],
          ['v', v, o.v],
        ] as const) {
          const res = compare(
            name,
            await readGuarded(name, got, part.ref.length, seed),
            part.ref,
            (i) => part.tol[i] + 1e-30,
            seed,
          );
          expect(res.ok, res.report).toBe(true);
        }
      },
    );

    it('decoded rows: positions p0.. of a cache get the whole forward rows, bit for bit', async () => {
      const seed = freshSeed();
      const s = { T: 19, K: 45, H: 4, KV: 2, hd: 10, r: 10 };
      const c = qkvCase(seed, s, true);
      const { cos, sin } = ropeTables(s.T, c.inv);
      const dummy = h.upload(new Float32Array(4));
      const tables = { cos: h.upload(cos), sin: h.upload(sin) };
      const w = h.upload(c.w);
      const b = h.upload(c.b as Float32Array);
      const whole = {
        q: guarded(s.H * s.T * s.hd),
        k: guarded(s.KV * s.T * s.hd),
        v: guarded(s.KV * s.T * s.hd),
      };
      await h.run(
        qkvRopeOps('whole', { x: h.upload(c.x), w, b, ...tables, ...whole, dummy }, s, {
          policy: CPU_ADAPTER,
        }),
      );
      const p0 = 16;
      const tail = {
        q: guarded(s.H * (s.T - p0) * s.hd),
        k: guarded(s.KV * s.T * s.hd),
        v: guarded(s.KV * s.T * s.hd),
      };
      const xTail = h.upload(c.x.slice(p0 * s.K));
      await h.run(
        qkvRopeOps(
          'tail',
          { x: xTail, w, b, ...tables, ...tail, dummy },
          { ...s, T: s.T - p0 },
          { policy: CPU_ADAPTER },
          { p0, rows: s.T },
        ),
      );
      const kWhole = await readGuarded('k', whole.k, s.KV * s.T * s.hd, seed);
      const kTail = await readGuarded('k tail', tail.k, s.KV * s.T * s.hd, seed);
      for (let j = 0; j < s.KV; j++)
        for (let t = p0; t < s.T; t++)
          for (let e = 0; e < s.hd; e++) {
            const at = (j * s.T + t) * s.hd + e;
            expect(kTail[at], `seed ${seed} k[${j}, ${t}, ${e}]`).toBe(kWhole[at]);
          }
      const qWhole = await readGuarded('q', whole.q, s.H * s.T * s.hd, seed);
      const qTail = await readGuarded('q tail', tail.q, s.H * (s.T - p0) * s.hd, seed);
      for (let hh = 0; hh < s.H; hh++)
        for (let t = 0; t < s.T - p0; t++)
          for (let e = 0; e < s.hd; e++)
            expect(qTail[(hh * (s.T - p0) + t) * s.hd + e], `seed ${seed} q`).toBe(
              qWhole[(hh * s.T + p0 + t) * s.hd + e],
            );
    });

    it('FAULT_GPTJ_ROTARY rotates GPT-J pairs: its own oracle', async () => {
      const seed = freshSeed();
      const s = { T: 11, K: 40, H: 2, KV: 1, hd: 12, r: 12 };
      const c = qkvCase(seed, s, false);
      const { cos, sin } = ropeTables(s.T, c.inv);
      const [q, k, v] = [guarded(s.H * s.T * s.hd), guarded(s.KV * s.T * s.hd), guarded(s.KV * s.T * s.hd)];
      const dummy = h.upload(new Float32Array(4));
      const buf = {
        x: h.upload(c.x),
        w: h.upload(c.w),
        b: null,
        cos: h.upload(cos),
        sin: h.upload(sin),
        q,
        k,
        v,
        dummy,
      };
      await h.run(
        qkvRopeOps('gptj', buf, s, { policy: CPU_ADAPTER, constants: { FAULT_GPTJ_ROTARY: true } }),
      );
      const o = oracle(c, s, 1, true);
      const got = await readGuarded('q', q, o.q.ref.length, seed);
      const res = compare('q (GPT-J)', got, o.q.ref, (i) => o.q.tol[i] + 1e-30, seed);
      expect(res.ok, res.report).toBe(true);
      const right = oracle(c, s, 1, false);
      const off = compare('q vs rotate-half', got, right.q.ref, (i) => right.q.tol[i] + 1e-30, seed);
      expect(off.bad, 'GPT-J pairs must move the rotated rows (all but position 0)').toBeGreaterThan(
        0.5 * o.q.ref.length,
      );
    });
  });
