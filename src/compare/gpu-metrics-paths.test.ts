// The GPU metrics' two element paths (shaders/metrics/compare_tiles.wgsl) against the CPU metrics (the fp64
// oracle, src/compare/metrics.ts): elements whose operands are zero or of exponent −103 … 100 take the common path
// (exact f32 TwoSums, the f32 rounding of a double-float baseline as one addition, sums at one scale per thread),
// any other the decoded one; here both are mixed in every tile. Each seed draws jobs of sizes that are not
// multiples of a tile, with magnitudes around both ends of the common path's window and across the whole f32
// range, double-float low parts of every size up to half an ulp (around the f64 rounding at 2^-52 of hi's
// binade), runs of rising and falling magnitude (a thread's scale raised again and again), and NaN, ±Inf, −0,
// subnormals planted. Exact: counts, maxUlp, maxAbs, histogram bins. Sums: every term is nonnegative and added
// with relative error ≤ 2^-44 (double-float), through at most 32 per thread, 7 tree levels in the workgroup and
// a few levels of folding (≤ 45 additions deep), so meanAbs, relL2 and the per-row relL2 hold within 3e-12 relative
// (relL2 is a square root: half the relative error of its sums). A failure prints the seed (KERNEL_SEED=<seed>).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, freshSeed, type Harness } from '../kernels/testing';
import { f32FromBits } from '../numeric/bits';
import { PRECISIONS } from '../numeric/precision';
import { mulberry32 } from '../numeric/random';
import { type CompareJob, GpuMetrics } from './gpu-metrics';
import { type Case, dfPairs, EXACT_FIELDS, finishCase, reduceJobs } from './gpu-metrics.testdata';
import { errorHistogram, fullMetrics, perTokenRelL2 } from './metrics';

let h: Harness;
let gm: GpuMetrics;
let narrow: GpuMetrics;
beforeAll(async () => {
  h = await createHarness();
  gm = new GpuMetrics(h.device, h.pipelines, 16);
  narrow = new GpuMetrics(h.device, h.pipelines, 16, true);
});
afterAll(() => {
  gm?.destroy();
  narrow?.destroy();
  h?.destroy();
});

const SUMS = 3e-12;

/** An exponent: near the common path's ends (−103, 100), inside it, or anywhere in f32's range. */
function exponentOf(rng: () => number): number {
  const u = rng();
  if (u < 0.3) return Math.floor(rng() * 40) - 25;
  if (u < 0.5) return -107 + Math.floor(rng() * 9);
  if (u < 0.7) return 96 + Math.floor(rng() * 9);
  return Math.floor(rng() * 277) - 149;
}

function f32Of(rng: () => number, e: number): number {
  return Math.fround((rng() < 0.5 ? -1 : 1) * (1 + rng()) * 2 ** e);
}

/** A case of n elements mixing both paths (see the file's header). */
function mixedCase(rng: () => number, n: number, df: boolean, mismatch: boolean): Case {
  const a = new Float32Array(n);
  const hi = new Float32Array(n);
  const lo = df ? new Float32Array(n) : null;
  for (let i = 0; i < n; i++) {
    const e = exponentOf(rng);
    hi[i] = f32Of(rng, e);
    const u = rng();
    // a: equal to hi, hi with a relative error of 2^-24 … 2^-4, or unrelated (of another exponent)
    if (u < 0.15) a[i] = hi[i];
    else if (u < 0.75) a[i] = hi[i] * (1 + (rng() - 0.5) * 2 ** -(4 + Math.floor(rng() * 21)));
    else a[i] = f32Of(rng, exponentOf(rng));
    if (lo && Number.isFinite(hi[i])) {
      // |lo| ≤ ulp(hi)/2, scaled by 2^-j: around the f64 rounding of hi + lo (j ≥ 5: bits below 2^-52 of hi)
      const bits = new Uint32Array(new Float32Array([Math.abs(hi[i])]).buffer)[0];
      const ulp = f32FromBits(bits + 1) - Math.abs(hi[i]);
      const j = rng() < 0.2 ? 0 : Math.floor(rng() * 36);
      lo[i] = Math.fround((rng() - 0.5) * ulp * 2 ** -j);
      if (rng() < 0.03) lo[i] = (rng() < 0.5 ? -0.5 : 0.5) * ulp; // a tie of the f32 rounding
    }
  }
  // Runs of rising and falling magnitude: a thread's scale raised again and again, or set high first.
  const run = Math.min(n, 1024);
  const s0 = Math.floor(rng() * (n - run + 1));
  const idx = Array.from({ length: run }, (_, k) => s0 + k);
  const mags = idx.map((i) => Math.abs(a[i]));
  const order = [...idx].sort((x, y) => mags[x - s0] - mags[y - s0]);
  if (rng() < 0.5) order.reverse();
  const [ra, rh, rl] = [order.map((i) => a[i]), order.map((i) => hi[i]), order.map((i) => lo?.[i] ?? 0)];
  idx.forEach((i, k) => {
    a[i] = ra[k];
    hi[i] = rh[k];
    if (lo) lo[i] = rl[k];
  });
  // Planted: NaN, ±Inf (agreeing, and where asked not), −0 against +0, subnormals, near the f32 maximum.
  const plants: Array<[number, number, number]> = [
    [Number.NaN, Number.NaN, 0],
    [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, 0],
    [Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY, 0],
    [-0, 0, 0],
    [0, -0, 0],
    [f32FromBits(0x00000123), -f32FromBits(0x00400001), 0],
    [f32FromBits(0x00000001), 0, 0],
    [3.3e38, -3.3e38, 0],
    [2 ** -103, 2 ** -104, 0],
    [2 ** 100, -(2 ** 100), 0],
  ];
  if (mismatch) plants.push([Number.NEGATIVE_INFINITY, 1, 0], [Number.NaN, 2, 0]);
  for (const [x, y, l] of plants) {
    const i = Math.floor(rng() * n);
    a[i] = x;
    hi[i] = y;
    if (lo) lo[i] = l;
  }
  return finishCase(a, hi, lo);
}

function rel(g: number, c: number): number {
  if (g === c) return 0;
  return Math.abs(g - c) / Math.abs(c);
}

describe('GpuMetrics: both element paths mixed in every tile, against the CPU metrics', () => {
  it('magnitudes across f32 and around the common path, double-float lo of every size, specials planted', async () => {
    // One seed a run (KERNEL_SEEDS=n runs n seeds in a row, from the first).
    const first = freshSeed();
    for (let s = 0; s < Number(process.env.KERNEL_SEEDS ?? 1); s++) await oneSeed(first + s);
  });
});

async function oneSeed(seed: number) {
  const rng = mulberry32(seed);
  const cases = Array.from({ length: 6 }, (_, k) => {
    const rows = 1 + Math.floor(rng() * 5);
    const n = rows * (700 + Math.floor(rng() * 1500));
    const df = k % 2 === 1;
    return {
      c: mixedCase(rng, n, df, k % 3 === 2),
      rows,
      df,
      precision: PRECISIONS[Math.floor(rng() * 4)],
    };
  });
  const jobs: CompareJob[] = cases.map(({ c, rows, precision }) => ({
    a: { kind: 'f32', buffer: h.upload(c.a) },
    b: c.lo ? { kind: 'df', buffer: h.upload(dfPairs(c.hi, c.lo)) } : { kind: 'f32', buffer: h.upload(c.hi) },
    n: c.a.length,
    rows,
    precision,
    histogram: true,
  }));
  // The same jobs again, without rows and histogram or with other rows (reduced once, or apart), and all of them
  // on the narrow kernel (5 operand slots: more dispatches) too; each on buffers of its own (12 + 1 bindings).
  const again: CompareJob[] = [
    { ...jobs[0], rows: undefined, histogram: false },
    { ...jobs[1], rows: jobs[1].rows === 1 ? jobs[1].n : 1, histogram: false },
  ];
  const got = await reduceJobs(h.device, gm, [...jobs, ...again]);
  const other = await reduceJobs(h.device, narrow, jobs);
  // The same tiles on either kernel: the same results bit for bit.
  expect(JSON.stringify(other), `seed ${seed}: narrow kernel`).toBe(
    JSON.stringify(got.slice(0, jobs.length)),
  );
  expect(got[jobs.length], `seed ${seed}: a job asked twice`).toEqual({
    metrics: got[0].metrics,
    perRow: null,
    histogram: null,
  });
  const apart = got[jobs.length + 1];
  expect(apart.perRow?.length, `seed ${seed}: other rows`).toBe(again[1].rows);
  expect(apart.histogram).toBeNull();
  for (const k of ['maxAbs', 'maxUlp', 'finiteCount', 'nanCount'] as const)
    expect(apart.metrics[k], `seed ${seed}: ${k} of the job with other rows`).toBe(got[1].metrics[k]);
  cases.forEach(({ c, rows, df, precision }, j) => {
    const what = `seed ${seed} job ${j} (n ${c.a.length}, ${df ? 'df' : 'f32'}, ${precision})`;
    const cpu = fullMetrics(c.a, c.b64, precision);
    const g = got[j].metrics;
    for (const k of ['n', ...EXACT_FIELDS, 'nonFiniteMismatch'] as const)
      expect(g[k], `${what}: ${k}`).toBe(cpu[k]);
    expect(
      rel(g.meanAbs, cpu.meanAbs),
      `${what}: meanAbs ${g.meanAbs} vs ${cpu.meanAbs}`,
    ).toBeLessThanOrEqual(SUMS);
    if (Number.isFinite(cpu.relL2))
      expect(rel(g.relL2, cpu.relL2), `${what}: relL2 ${g.relL2} vs ${cpu.relL2}`).toBeLessThanOrEqual(SUMS);
    else expect(g.relL2, `${what}: relL2`).toBe(cpu.relL2);
    const perRow = perTokenRelL2(c.a, c.b64, rows, c.a.length / rows);
    perRow.forEach((r, i) => {
      const gr = got[j].perRow?.[i] ?? Number.NaN;
      if (Number.isFinite(r)) expect(rel(gr, r), `${what}: row ${i} ${gr} vs ${r}`).toBeLessThanOrEqual(SUMS);
      else expect(gr, `${what}: row ${i}`).toBe(r);
    });
    expect(got[j].histogram, `${what}: histogram`).toEqual(errorHistogram(c.a, c.b64));
  });
}
