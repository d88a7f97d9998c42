// GPU comparison metrics against the CPU metrics (src/compare/metrics.ts, the oracle): fresh seeded random
// tensors of sizes 1, 7, 1000, 65541 (3 rows of 21847: rows over several tiles) and ≈ 2 M, f32 and
// double-float baselines, every precision, planted NaN/±Inf/−0/subnormals/near-max values, special tensors
// (zeros, equal, all subnormal, all huge, errors on histogram edges), segments, bit differences, bad input.
// Tolerances: counts, maxUlp, maxAbs and histogram bins exact; sums and what is derived from them 1e-6
// relative (the GPU sums are double-float, ~1e-13; the CPU's are f64). A failure prints the seed (replay with
// KERNEL_SEED=<seed>).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, freshSeed, type Harness } from '../kernels/testing';
import { f32FromBits } from '../numeric/bits';
import { PRECISIONS, type Precision } from '../numeric/precision';
import { mulberry32 } from '../numeric/random';
import {
  type CompareJob,
  type CompareOut,
  GpuMetrics,
  histogramEdgeWords,
  type Operand,
} from './gpu-metrics';
import {
  type Case,
  dfPairs,
  EXACT_FIELDS,
  finishCase,
  type Plant,
  randomCase,
  randomWords,
  reduceJobs,
} from './gpu-metrics.testdata';
import { cpuBin, histogramEdges } from './gpu-metrics-edges';
import { packTiles, TileList } from './gpu-metrics-tiles';
import { errorHistogram, fullMetrics, perTokenRelL2 } from './metrics';

let h: Harness;
let gm: GpuMetrics;
beforeAll(async () => {
  h = await createHarness();
  gm = new GpuMetrics(h.device, h.pipelines);
});
afterAll(() => {
  gm?.destroy();
  h?.destroy();
  const lines = Object.entries(worst).map(([k, v]) => `  ${k}: ${v.toExponential(2)}`);
  console.log(`GPU metrics vs CPU, worst relative difference per field:\n${lines.join('\n')}`);
});

/** Worst relative difference seen per field (printed at the end). */
const worst: Record<string, number> = {};
const REL = 1e-6;

function relDiff(g: number, c: number): number {
  if (g === c || (Number.isNaN(g) && Number.isNaN(c))) return 0;
  if (!Number.isFinite(g) || !Number.isFinite(c) || c === 0) return Number.POSITIVE_INFINITY;
  return Math.abs(g - c) / Math.abs(c);
}

function near(what: string, field: string, g: number, c: number) {
  const r = relDiff(g, c);
  worst[field] = Math.max(worst[field] ?? 0, r);
  expect(r <= REL, `${what}: ${field} GPU ${g} CPU ${c} (relative ${r})`).toBe(true);
}

function exact(what: string, field: string, g: number, c: number) {
  worst[field] = Math.max(worst[field] ?? 0, relDiff(g, c));
  expect(g, `${what}: ${field}`).toBe(c);
}

interface Expect {
  c: Case;
  precision: Precision;
  rows?: number;
  histogram?: boolean;
}

function check(what: string, got: CompareOut, e: Expect) {
  const cpu = fullMetrics(e.c.a, e.c.b64, e.precision);
  const g = got.metrics;
  for (const k of ['n', ...EXACT_FIELDS] as const) exact(what, k, g[k], cpu[k]);
  expect(g.nonFiniteMismatch, `${what}: nonFiniteMismatch`).toBe(cpu.nonFiniteMismatch);
  for (const k of ['meanAbs', 'relL2', 'sqnrDb'] as const) near(what, k, g[k], cpu[k]);
  // cosineDistance = (‖a−b‖² − (‖a‖−‖b‖)²) / (2‖a‖‖b‖): sums that are 1e-6 relative give it 1e-6 relative to
  // (‖a−b‖² + |‖a‖² − ‖b‖²|) / (2‖a‖‖b‖), the size of its terms (it is ~0 for parallel a and b).
  const s = sums(e.c);
  const scale =
    s.ssqA > 0 && s.ssqB > 0 ? (s.ssqE + Math.abs(s.ssqA - s.ssqB)) / (2 * Math.sqrt(s.ssqA * s.ssqB)) : 0;
  const gc = g.cosineDistance;
  const cc = cpu.cosineDistance;
  const rc =
    gc === cc ? 0 : Number.isFinite(gc - cc) ? Math.abs(gc - cc) / Math.max(Math.abs(cc), scale) : Infinity;
  worst['cosineDistance (relative to its terms)'] = Math.max(
    worst['cosineDistance (relative to its terms)'] ?? 0,
    rc,
  );
  expect(rc <= REL, `${what}: cosineDistance GPU ${gc} CPU ${cc} (relative to its terms ${rc})`).toBe(true);
  if (e.rows) {
    const ref = perTokenRelL2(e.c.a, e.c.b64, e.rows, e.c.a.length / e.rows);
    expect(got.perRow?.length, `${what}: rows`).toBe(e.rows);
    for (const [i, r] of ref.entries())
      near(`${what} row ${i}`, 'perRow relL2', got.perRow?.[i] ?? Number.NaN, r);
  } else expect(got.perRow).toBeNull();
  if (e.histogram) {
    const ref = errorHistogram(e.c.a, e.c.b64);
    const off = ref.counts.reduce(
      (m, c, k) => Math.max(m, Math.abs(c - (got.histogram?.counts[k] ?? -1))),
      0,
    );
    worst['histogram bins (max |count difference|)'] = Math.max(
      worst['histogram bins (max |count difference|)'] ?? 0,
      off,
    );
    expect(got.histogram, `${what}: histogram`).toEqual(ref);
  } else expect(got.histogram).toBeNull();
}

/** ‖a − b‖², ‖a‖², ‖b‖² over the both-finite positions, in f64 (a plain check of the scale of the terms). */
function sums(c: Case) {
  let ssqE = 0;
  let ssqA = 0;
  let ssqB = 0;
  for (let i = 0; i < c.a.length; i++) {
    const x = c.a[i];
    const y = c.b64[i];
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
    ssqE += (x - y) ** 2;
    ssqA += x * x;
    ssqB += y * y;
  }
  return { ssqE, ssqA, ssqB };
}

/** Uploads the operands of a case into fresh buffers (a df baseline as (hi, lo) pairs). */
function operands(c: Case): { a: Operand; b: Operand } {
  return {
    a: { kind: 'f32', buffer: h.upload(c.a) },
    b: c.lo ? { kind: 'df', buffer: h.upload(dfPairs(c.hi, c.lo)) } : { kind: 'f32', buffer: h.upload(c.hi) },
  };
}

const run = (jobs: CompareJob[]) => reduceJobs(h.device, gm, jobs);

describe('GpuMetrics vs fullMetrics / perTokenRelL2 / errorHistogram', () => {
  it('random jobs of sizes 1 … 65541, both baselines, every precision, batched in shared buffers', async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const sizes: Array<[number, number]> = [
      [1, 1],
      [7, 7],
      [1000, 8],
      [65541, 3],
    ];
    const plants: Plant[] = ['none', 'agree', 'mismatch'];
    const specs: Array<Expect & { df: boolean; aOff: number; bOff: number }> = [];
    let aLen = 0;
    const bLen = { f32: 0, df: 0 };
    let p = 0;
    for (const [n, rows] of sizes)
      for (const df of [false, true])
        for (const precision of PRECISIONS) {
          const c = randomCase(rng, n, df, n < 7 ? 'none' : plants[p++ % 3]);
          const aOff = aLen + 1 + Math.floor(rng() * 70); // odd offsets: not binding-aligned
          aLen = aOff + n;
          const kind = df ? 'df' : 'f32';
          const bOff = bLen[kind] + Math.floor(rng() * 70);
          bLen[kind] = bOff + n;
          specs.push({
            c,
            precision,
            rows: rng() < 0.7 ? rows : undefined,
            histogram: rng() < 0.7,
            df,
            aOff,
            bOff,
          });
        }
    // Every job reads one arena for a and one per baseline kind: three dispatches of pass 1 in all.
    const aArena = new Float32Array(aLen);
    const bF32 = new Float32Array(bLen.f32);
    const bDf = new Float32Array(2 * bLen.df);
    for (const s of specs) {
      aArena.set(s.c.a, s.aOff);
      if (s.c.lo) bDf.set(dfPairs(s.c.hi, s.c.lo), 2 * s.bOff);
      else bF32.set(s.c.hi, s.bOff);
    }
    const [aBuf, fBuf, dBuf] = [h.upload(aArena), h.upload(bF32), h.upload(bDf)];
    const jobs: CompareJob[] = specs.map((s) => ({
      a: { kind: 'f32', buffer: aBuf, offset: s.aOff },
      b: { kind: s.df ? 'df' : 'f32', buffer: s.df ? dBuf : fBuf, offset: s.bOff },
      n: s.c.a.length,
      rows: s.rows,
      precision: s.precision,
      histogram: s.histogram,
    }));
    const got = await run(jobs);
    specs.forEach((s, j) => {
      check(`seed ${seed} job ${j} (n ${s.c.a.length}, ${s.df ? 'df' : 'f32'}, ${s.precision})`, got[j], s);
    });
  });

  it('special tensors: zeros, equal, subnormal, near f32 max, errors on the histogram edges', async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const n = 1031;
    const fill = (f: (i: number) => number) => Float32Array.from({ length: n }, (_, i) => f(i));
    const rand = (s: number) => fill(() => (rng() * 2 - 1) * s);
    const r1 = rand(1);
    const cases: Array<[string, Case]> = [
      ['b all zero', finishCase(rand(1), new Float32Array(n), null)],
      ['a all zero', finishCase(new Float32Array(n), rand(1), null)],
      [
        'both zero, −0 against +0',
        finishCase(
          fill((i) => (i % 2 ? -0 : 0)),
          fill(() => 0),
          null,
        ),
      ],
      ['equal', finishCase(r1, Float32Array.from(r1), null)],
      ['equal, df with lo 0', finishCase(r1, Float32Array.from(r1), new Float32Array(n))],
      [
        'all subnormal',
        finishCase(
          fill(() => f32FromBits((rng() * 0x7fffff) | 1)),
          rand(1e-39),
          null,
        ),
      ],
      [
        'subnormal differences',
        finishCase(
          fill((i) => 1e-30 + (i % 3) * 1e-44),
          fill(() => 1e-30),
          null,
        ),
      ],
      ['near f32 max', finishCase(rand(3.4e38), rand(3.4e38), null)],
      ['near f32 max, df', finishCase(rand(3.4e38), rand(3.4e38), rand(1e30))],
      [
        'one difference in many',
        finishCase(
          fill((i) => (i === 77 ? 1.5 : 1)),
          fill(() => 1),
          null,
        ),
      ],
    ];
    // Errors on and around every histogram edge: |a − b| = fround(edge) and its f32 neighbours, 1 and 100
    // (where log10 is exact), with b = 0 and with b = 0.25.
    const edges = histogramEdges(40);
    const ea: number[] = [];
    const eb: number[] = [];
    for (const t of [...edges, 1, 100]) {
      const f = Math.fround(t);
      const bits = new Uint32Array(new Float32Array([f]).buffer)[0];
      for (const v of [f32FromBits(bits - 1), f, f32FromBits(bits + 1)]) {
        ea.push(v, v + 0.25);
        eb.push(0, 0.25);
      }
    }
    cases.push(['histogram edges', finishCase(Float32Array.from(ea), Float32Array.from(eb), null)]);
    // Double-float baselines whose f32 rounding is a tie (lo = ±ulp/2, or −ulp/4 below a power of two): a is
    // that rounding, so maxUlp is 0 only if the GPU rounds hi + lo as Math.fround does; and one that rounds
    // past the f32 maximum to Inf (1 ulp from the maximum).
    const th: number[] = [];
    const tl: number[] = [];
    const ta: number[] = [];
    for (let i = 0; i < 300; i++) {
      const bits = (0x3f000000 + Math.floor(rng() * 0x2000000)) >>> 0;
      const hv = f32FromBits(bits);
      const ulp = f32FromBits(bits + 1) - hv;
      const pow2 = i % 3 === 2;
      const hiv = pow2 ? f32FromBits(bits & 0xff800000) : hv;
      const lov = pow2 ? -ulp / 4 : i % 2 ? ulp / 2 : -ulp / 2;
      th.push(hiv);
      tl.push(lov);
      ta.push(Math.fround(hiv + lov));
    }
    const ties = finishCase(Float32Array.from(ta), Float32Array.from(th), Float32Array.from(tl));
    cases.push(['df ties', ties]);
    const max = new Float32Array([f32FromBits(0x7f7fffff)]);
    cases.push(['df past f32 max', finishCase(max, max, new Float32Array([2 ** 103]))]);
    const specs = cases.map(([name, c]) => ({
      name,
      c,
      precision: name.startsWith('df ') ? 'fp32' : PRECISIONS[Math.floor(rng() * 4)],
    }));
    const jobs = specs.map(({ c, precision }): CompareJob => {
      return { ...operands(c), n: c.a.length, precision, histogram: true };
    });
    const got = await run(jobs);
    specs.forEach((s, j) => {
      check(`seed ${seed} ${s.name} (${s.precision})`, got[j], {
        c: s.c,
        precision: s.precision,
        histogram: true,
      });
    });
    const m = got.map((g) => g.metrics);
    expect([m[0].relL2, m[0].cosineDistance, m[0].sqnrDb]).toEqual([Infinity, 1, -Infinity]);
    expect([m[1].relL2, m[1].cosineDistance]).toEqual([1, 1]);
    expect([m[2].relL2, m[2].cosineDistance, m[2].sqnrDb, m[2].maxUlp]).toEqual([0, 0, Infinity, 0]);
    expect([m[3].relL2, m[3].sqnrDb, m[4].relL2, m[4].sqnrDb]).toEqual([0, Infinity, 0, Infinity]);
    expect([m[m.length - 2].maxUlp, m[m.length - 1].maxUlp]).toEqual([0, 1]);
  });

  it('≈ 2 M elements (16 rows of 125003), double-float baseline, histogram', async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const rows = 16;
    const n = rows * 125_003;
    const c = randomCase(rng, n, true, 'agree');
    const [got] = await run([{ ...operands(c), n, rows, precision: 'fp16', histogram: true }]);
    check(`seed ${seed} 2M df`, got, { c, precision: 'fp16', rows, histogram: true });
  });
});

describe('GpuMetrics segments, bit differences and refusals', () => {
  it('a [T, V] tensor split by columns into segments (other buffers, offsets) reduces as one, per row', async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const T = 5;
    const widths = [1001, 4099, 3];
    const V = widths.reduce((s, w) => s + w, 0);
    const whole = randomCase(rng, T * V, true, 'agree');
    // Segment s holds columns [c0, c0 + w) of every row, row-major [T][w], in its own buffers.
    const segments: NonNullable<CompareJob['segments']> = [];
    let c0 = 0;
    for (const w of widths) {
      const pick = (src: Float32Array) =>
        Float32Array.from({ length: T * w }, (_, i) => src[Math.floor(i / w) * V + c0 + (i % w)]);
      const pad = 3 + Math.floor(rng() * 50);
      const a = new Float32Array(pad + T * w);
      a.set(pick(whole.a), pad);
      const b = new Float32Array(2 * (pad + T * w));
      b.set(dfPairs(pick(whole.hi), pick(whole.lo!)), 2 * pad);
      segments.push({
        a: { kind: 'f32', buffer: h.upload(a), offset: pad },
        b: { kind: 'df', buffer: h.upload(b), offset: pad },
        n: T * w,
      });
      c0 += w;
    }
    const [got] = await run([
      { a: segments[0].a, b: segments[0].b, n: T * V, segments, rows: T, precision: 'bf16', histogram: true },
    ]);
    check(`seed ${seed} segments`, got, { c: whole, precision: 'bf16', rows: T, histogram: true });
  });

  it('bit differences: count and first index, identical buffers give -1', async () => {
    const seed = freshSeed();
    const sizes = [1, 4097, 100_003];
    const jobs = [];
    const expected = [];
    for (const [k, n] of sizes.entries()) {
      const a = randomWords(seed + k, n);
      for (const flips of [0, 1, 17]) {
        const b = Uint32Array.from(a);
        const rng = mulberry32(seed + 100 * k + flips);
        for (let f = 0; f < Math.min(flips, n); f++) b[Math.floor(rng() * n)] ^= 1 << Math.floor(rng() * 32);
        let count = 0;
        let firstIndex = -1;
        for (let i = 0; i < n; i++) {
          if (a[i] !== b[i]) {
            count++;
            if (firstIndex < 0) firstIndex = i;
          }
        }
        jobs.push({ a: h.upload(a), b: h.upload(b), n });
        expected.push({ count, firstIndex });
      }
    }
    const enc = h.device.createCommandEncoder();
    const pending = gm.record(enc, [], jobs);
    h.device.queue.submit([enc.finish()]);
    const got = await pending.read();
    pending.release();
    expect(got.bitDiff, `seed ${seed}`).toEqual(expected);
    expect(got.compare).toEqual([]);
  });

  it('a summary that was never written fails to decode (records start poisoned); read twice is refused', async () => {
    const c = randomCase(mulberry32(1), 300, false, 'none');
    const enc = h.device.createCommandEncoder();
    const pending = gm.record(enc, [{ ...operands(c), n: 300, rows: 3, precision: 'fp32', histogram: true }]);
    // Not submitted: the readback holds nothing the kernels wrote.
    await expect(pending.read()).rejects.toThrow(/job 0: summary covers 0 of 300 elements/);
    await expect(pending.read()).rejects.toThrow(/already read/);
    pending.release();
    enc.finish();
  });

  it('bad input is refused before any GPU work, in one line naming the job', () => {
    const c = randomCase(mulberry32(2), 64, false, 'none');
    const ops = operands(c);
    const bad: Array<[CompareJob, RegExp]> = [
      [{ ...ops, n: 65, precision: 'fp32' }, /job 0 a: elements \[0, 65\) need 260 bytes/],
      [{ ...ops, n: 64, rows: 5, precision: 'fp32' }, /job 0: 64 elements do not split into 5 rows/],
      [{ ...ops, n: 64, precision: 'fp64' as Precision }, /job 0: unknown precision 'fp64'/],
      [
        { a: { ...ops.b, kind: 'df' }, b: ops.b, n: 8, precision: 'fp32' },
        /job 0 a: the result under test must be f32/,
      ],
      [
        { ...ops, n: 64, segments: [{ ...ops, n: 32 }], precision: 'fp32' },
        /job 0: n is 64 but the segments hold 32/,
      ],
      [{ ...ops, n: 1.5, precision: 'fp32' }, /job 0: element count 1.5/],
    ];
    for (const [job, re] of bad) {
      const enc = h.device.createCommandEncoder();
      expect(() => gm.record(enc, [job])).toThrow(re);
      enc.finish();
    }
  });
});

describe('GpuMetrics planning and histogram edges (CPU)', () => {
  it('packs tiles into dispatches whose bound ranges fit the binding limit', () => {
    const A = { label: 'A', size: 1 << 30 } as GPUBuffer;
    const B = { label: 'B', size: 1 << 30 } as GPUBuffer;
    const rng = mulberry32(freshSeed());
    const tiles = Array.from({ length: 500 }, (_, i) => {
      const ae = Math.floor(rng() * 1e6) * 4;
      const be = Math.floor(rng() * 1e6) * 8;
      const count = 1 + Math.floor(rng() * 4096);
      return {
        a: A,
        b: i % 3 ? B : A,
        aByte: ae,
        aEnd: ae + count * 4,
        bByte: be,
        bEnd: be + count * 8,
        count,
      };
    });
    const list = new TileList(); // grown from its first 64 tiles
    tiles.forEach((t, i) => {
      list.push(list.pair(t.a, t.b), t.aByte, t.aEnd, t.bByte, t.bEnd, t.count, 0, i);
    });
    const limit = 1 << 20;
    const packed = packTiles(list, limit, 256, 100);
    let seen = 0;
    for (const p of packed) {
      expect(p.a.size).toBeLessThanOrEqual(limit);
      expect(p.b.size).toBeLessThanOrEqual(limit);
      expect(p.tiles).toBeLessThanOrEqual(100);
      expect((p.a.offset ?? 0) % 256).toBe(0);
      for (let t = 0; t < p.tiles; t++) {
        const tile = tiles[p.table[t * 8 + 4]];
        expect(p.a.buffer).toBe(tile.a);
        expect(p.b.buffer).toBe(tile.b);
        expect(p.table[t * 8 + 2]).toBe(tile.count);
        if (t > 0) expect(p.table[t * 8]).toBeGreaterThanOrEqual(p.table[(t - 1) * 8]); // in order of aByte
        expect((p.b.offset ?? 0) + p.table[t * 8 + 1] * 4).toBe(tile.bByte);
        expect(tile.aEnd).toBeLessThanOrEqual((p.a.offset ?? 0) + (p.a.size ?? 0));
        expect(tile.bEnd).toBeLessThanOrEqual((p.b.offset ?? 0) + (p.b.size ?? 0));
        seen++;
      }
    }
    expect(seen).toBe(tiles.length);
  });

  it('each edge is the least f64 error of its CPU bin, and the shader triple holds it to 2^-48', () => {
    const edges = histogramEdges(40);
    const words = histogramEdgeWords();
    const f = new Float32Array(words.buffer);
    const i32 = new Int32Array(words.buffer);
    const below = (x: number) => {
      const v = new Float64Array([x]);
      new BigUint64Array(v.buffer)[0] -= 1n;
      return v[0];
    };
    edges.forEach((t, k) => {
      expect(cpuBin(t, 40)).toBe(k + 1);
      expect(cpuBin(below(t), 40)).toBe(k);
      const held = (f[4 * k + 1] + f[4 * k + 2]) * 2 ** i32[4 * k];
      expect(Math.abs(held - t) / t).toBeLessThan(2 ** -48);
    });
    expect(cpuBin(1, 40)).toBe(30); // log10 exact on the edge: the bin above
  });
});
