// The GPU metrics' stretches (gpu-metrics-plan.ts, -tiles.ts, shaders/metrics/compare_tiles.wgsl): the CPU lists a
// run of one job's tiles as one table entry and each workgroup finds its stretch and tile from its id. Checked: the
// plan over 60 random seeds (every element of every job in exactly one tile of its own stretch, tiles and their
// records and histograms consecutive, a stretch of more tiles than a dispatch may have cut), packing by workgroups
// (50 seeds), each job's tile size and the larger tiles a records budget asks for (50 seeds), and on the GPU jobs of
// three tile sizes in the same buffers (one dispatch holding stretches of 256 … 1024-element tiles, rows, odd sizes
// and offsets; KERNEL_SWEEP=50 passed) against the CPU metrics. Tolerances as in
// gpu-metrics.test.ts: counts, maxUlp, maxAbs and the histogram exact; sums 1e-6 relative. Seeds are printed on
// failure (replay with KERNEL_SEED=<seed>).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HIST_BINS, NO_HIST, REC_WORDS } from '../kernels/metrics';
import { createHarness, freshSeed, type Harness } from '../kernels/testing';
import { PRECISIONS } from '../numeric/precision';
import { mulberry32 } from '../numeric/random';
import { type CompareJob, GpuMetrics } from './gpu-metrics';
import { dfPairs, EXACT_FIELDS, randomCase, reduceJobs } from './gpu-metrics.testdata';
import { MIN_TILE, planRecord, TARGET_TILES, TILE, tileOf } from './gpu-metrics-plan';
import { packTiles, TILE_EXTRA, TileList } from './gpu-metrics-tiles';
import { errorHistogram, fullMetrics, perTokenRelL2 } from './metrics';

let h: Harness;
let gm: GpuMetrics;
beforeAll(async () => {
  h = await createHarness();
  gm = new GpuMetrics(h.device, h.pipelines, 512); // 512 tiles a job: three tile sizes at the sizes below
});
afterAll(() => {
  gm?.destroy();
  h?.destroy();
});

/** A stand-in buffer for planning (never bound): big enough, with STORAGE usage. */
const fake = (label: string) => ({ label, size: 2 ** 40, usage: GPUBufferUsage.STORAGE }) as GPUBuffer;

describe('stretches: planning and packing (CPU)', () => {
  it('a job tile is the least power of two from 256 to 4096 giving at most the target tiles', () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    for (let i = 0; i < 100_000; i++) {
      const n = Math.floor(2 ** (rng() * 31));
      const target = i % 2 ? TARGET_TILES : 1 + Math.floor(rng() * 4096);
      const t = tileOf(n, MIN_TILE, target);
      const what = `seed ${seed} n ${n} target ${target} tile ${t}`;
      expect(t >= MIN_TILE && t <= TILE && (t & (t - 1)) === 0, what).toBe(true);
      if (t < TILE) expect(Math.ceil(n / t) <= target, what).toBe(true);
      if (t > MIN_TILE) expect(Math.ceil(n / (t / 2)) > target, what).toBe(true);
    }
  });

  it('every element of every job lies in one tile of its own stretch; tiles, records and histograms in order (60 seeds)', () => {
    const base = freshSeed();
    for (let s = 0; s < 60; s++) {
      const seed = (base + s) >>> 0;
      const rng = mulberry32(seed);
      const bufs = [fake('A'), fake('B'), fake('C')];
      const jobs: CompareJob[] = Array.from({ length: 1 + Math.floor(rng() * 12) }, () => {
        const rows = 1 + Math.floor(rng() * 9);
        const n = rows * Math.floor(rng() ** 3 * 400_000);
        const pick = () => bufs[Math.floor(rng() * 3)];
        const df = rng() < 0.5;
        const split = rng() < 0.3 && n > 0;
        const cut = split ? rows * Math.floor(rng() * (n / rows)) : 0;
        return {
          a: { kind: 'f32', buffer: pick(), offset: Math.floor(rng() * 1000) },
          b: { kind: df ? 'df' : 'f32', buffer: pick(), offset: Math.floor(rng() * 1000) },
          n,
          rows: rng() < 0.5 ? rows : undefined,
          segments: split
            ? [
                { a: { kind: 'f32', buffer: pick() }, b: { kind: 'f32', buffer: pick(), offset: 3 }, n: cut },
                {
                  a: { kind: 'f32', buffer: pick(), offset: 5 },
                  b: { kind: 'df', buffer: pick() },
                  n: n - cut,
                },
              ]
            : undefined,
          precision: PRECISIONS[Math.floor(rng() * PRECISIONS.length)],
          histogram: rng() < 0.5,
        };
      });
      const plan = planRecord(jobs, []);
      const t = plan.compareTiles;
      const what = `seed ${seed}`;
      let tile = 0;
      let hist = -1;
      let firstHist = -1;
      let e = 0; // entry
      jobs.forEach((job, j) => {
        const per = tileOf(job.n);
        const rows = job.rows ?? 1;
        const segs = job.segments ?? [{ a: job.a, b: job.b, n: job.n }];
        for (let r = 0; r < rows; r++)
          for (const sg of segs) {
            const len = sg.n / rows;
            const bw = sg.b.kind === 'df' ? 8 : 4;
            for (let c = 0; c < len; e++) {
              // Entries follow the elements of each row of each segment, without gap or overlap.
              const w = e * TILE_EXTRA;
              const count = t.words[w];
              const groups = t.groups[e];
              expect(t.pairs[t.pairOf[e]], `${what} job ${j}`).toEqual({ a: sg.a.buffer, b: sg.b.buffer });
              expect(t.aByte[e], what).toBe(((sg.a.offset ?? 0) + r * len + c) * 4);
              expect(t.aEnd[e] - t.aByte[e], what).toBe(count * 4);
              expect(t.bByte[e], what).toBe(((sg.b.offset ?? 0) + r * len + c) * bw);
              expect(t.words[w + 5], what).toBe(per);
              expect(groups, what).toBe(Math.ceil(count / per));
              expect(groups <= 65535 && count > 0, what).toBe(true);
              expect(t.words[w + 2], `${what} job ${j}: the stretch's first record`).toBe(
                plan.summaryWords + tile * REC_WORDS,
              );
              if (job.histogram) {
                const hw = t.words[w + 3];
                if (hist >= 0) expect(hw, `${what}: histograms consecutive`).toBe(hist);
                else firstHist = hw;
                hist = hw + groups * HIST_BINS;
              } else expect(t.words[w + 3], what).toBe(NO_HIST);
              tile += groups;
              c += count;
            }
          }
      });
      expect(e, what).toBe(t.length);
      // The histograms start right after the last tile's record.
      if (firstHist >= 0) expect(firstHist, what).toBe(plan.summaryWords + tile * REC_WORDS);
    }
  });

  it('under a records budget the tiles grow, all from one least tile, until their records fit (50 seeds)', () => {
    const base = freshSeed();
    for (let s = 0; s < 50; s++) {
      const seed = (base + s) >>> 0;
      const rng = mulberry32(seed);
      const A = fake('A');
      const jobs: CompareJob[] = Array.from({ length: 1 + Math.floor(rng() * 40) }, () => {
        const rows = 1 + Math.floor(rng() * 4);
        return {
          a: { kind: 'f32', buffer: A },
          b: { kind: rng() < 0.5 ? 'df' : 'f32', buffer: A },
          n: rows * (1 + Math.floor(rng() ** 2 * 2_000_000)),
          rows: rng() < 0.5 ? rows : undefined,
          precision: 'fp32',
          histogram: rng() < 0.5,
        };
      });
      const budget = Math.floor(rng() * 2_000_000);
      const what = `seed ${seed} budget ${budget}`;
      for (const [b, free] of [
        [budget, false],
        [Number.POSITIVE_INFINITY, true],
      ] as const) {
        const plan = planRecord(jobs, [], b);
        const t = plan.compareTiles;
        let words = 0;
        const pers = new Set<number>();
        for (let e = 0; e < t.length; e++) {
          words +=
            t.groups[e] * REC_WORDS + (t.words[e * TILE_EXTRA + 3] === NO_HIST ? 0 : t.groups[e] * HIST_BINS);
          pers.add(t.words[e * TILE_EXTRA + 5]);
        }
        const least = [MIN_TILE, 512, 1024, 2048, TILE].find((L) =>
          jobs.every((job) => pers.has(tileOf(job.n, L)) || job.n === 0),
        );
        expect(least, `${what}: every tile is tileOf(n, L) of one least tile L`).toBeDefined();
        const expected = new Set(jobs.map((job) => tileOf(job.n, least)));
        expect(
          [...pers].sort((x, y) => x - y),
          what,
        ).toEqual([...expected].sort((x, y) => x - y));
        if (free) expect(least, what).toBe(MIN_TILE);
        else
          expect(words <= b || [...pers].every((p) => p === TILE), `${what}: ${words} words of tiles`).toBe(
            true,
          );
      }
    }
  });

  it('a stretch longer than 65535 tiles is cut; entries pack by workgroups within maxGroups', () => {
    const n = 65535 * TILE * 2 + 4097;
    const plan = planRecord(
      [
        {
          a: { kind: 'f32', buffer: fake('A') },
          b: { kind: 'f32', buffer: fake('B') },
          n,
          precision: 'fp32',
        },
      ],
      [],
    );
    const t = plan.compareTiles;
    expect(t.length).toBe(3);
    expect(Array.from(t.groups.subarray(0, 3))).toEqual([65535, 65535, 2]);
    expect(t.words[2 * TILE_EXTRA]).toBe(4097);

    const base = freshSeed();
    for (let round = 0; round < 50; round++) packRound((base + round) >>> 0);
    const list = new TileList();
    const A = fake('A');
    const max = 5000;
    list.push(list.pair(A, A), 0, 4, 0, 4, 1, 0, 0, 0, 256, max + 1);
    expect(() => packTiles(list, 2 ** 30, 256, max)).toThrow(/entry of 5001 tiles, over 5000/);
  });
});

describe('stretches on the GPU', () => {
  // KERNEL_SWEEP=n draws n seeds in one run (the pipelines compiled once).
  const sweep = Number(process.env.KERNEL_SWEEP ?? 1);
  it(
    'jobs of 256 … 1024-element tiles in the same buffers (one dispatch per pair) match the CPU metrics',
    async () => {
      for (let round = 0; round < sweep; round++) await oneDispatch();
    },
    120_000 * sweep,
  );
});

async function oneDispatch() {
  const seed = freshSeed();
  const rng = mulberry32(seed);
  // Sizes that give tiles of 256, 512 and 1024 (none a multiple of its tile), with rows where they divide.
  const sizes: Array<[number, number | undefined]> = [
    [1, undefined],
    [255, 5],
    [131_073, 3],
    [300_003, 3],
  ];
  const specs = sizes.map(([n, rows]) => {
    const df = rng() < 0.5;
    return {
      c: randomCase(rng, n, df, (['none', 'agree', 'mismatch'] as const)[Math.floor(rng() * 3)]),
      df,
      rows: rows && rng() < 0.7 ? rows : undefined,
      histogram: rng() < 0.6,
      precision: PRECISIONS[Math.floor(rng() * PRECISIONS.length)],
      aOff: 0,
      bOff: 0,
    };
  });
  let aLen = 0;
  const bLen = { f32: 0, df: 0 };
  for (const s of specs) {
    s.aOff = aLen + 1 + Math.floor(rng() * 70);
    aLen = s.aOff + s.c.a.length;
    const kind = s.df ? 'df' : 'f32';
    s.bOff = bLen[kind] + Math.floor(rng() * 70);
    bLen[kind] = s.bOff + s.c.a.length;
  }
  const aArena = new Float32Array(aLen);
  const bF32 = new Float32Array(Math.max(1, bLen.f32));
  const bDf = new Float32Array(Math.max(2, 2 * bLen.df));
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
  const got = await reduceJobs(h.device, gm, jobs);
  specs.forEach((s, j) => {
    const what = `seed ${seed} job ${j} (n ${s.c.a.length}, tile ${tileOf(s.c.a.length, MIN_TILE, 512)}, ${s.df ? 'df' : 'f32'}, ${s.precision})`;
    const cpu = fullMetrics(s.c.a, s.c.b64, s.precision);
    const g = got[j].metrics;
    for (const k of ['n', ...EXACT_FIELDS] as const) expect(g[k], `${what}: ${k}`).toBe(cpu[k]);
    const rel = (x: number, y: number) => (x === y ? 0 : Math.abs(x - y) / Math.abs(y));
    for (const k of ['meanAbs', 'relL2', 'sqnrDb'] as const)
      expect(rel(g[k], cpu[k]) <= 1e-6, `${what}: ${k} GPU ${g[k]} CPU ${cpu[k]}`).toBe(true);
    if (s.rows) {
      const ref = perTokenRelL2(s.c.a, s.c.b64, s.rows, s.c.a.length / s.rows);
      ref.forEach((r, i) => {
        expect(rel(got[j].perRow![i], r) <= 1e-6, `${what} row ${i}`).toBe(true);
      });
    } else expect(got[j].perRow).toBeNull();
    if (s.histogram) expect(got[j].histogram, `${what}: histogram`).toEqual(errorHistogram(s.c.a, s.c.b64));
    else expect(got[j].histogram).toBeNull();
  });
}

/** Random entries of 1 … 3000 tiles packed within 5000 workgroups a dispatch: prefixes, totals, every entry once. */
function packRound(seed: number) {
  const rng = mulberry32(seed);
  const list = new TileList();
  const A = fake('A');
  const groups: number[] = [];
  for (let i = 0; i < 300; i++) {
    const g = 1 + Math.floor(rng() * 3000);
    groups.push(g);
    list.push(list.pair(A, A), i * 4096, i * 4096 + 64, i * 4096, i * 4096 + 64, 16, 0, i, 0, 256, g);
  }
  const max = 5000;
  const packed = packTiles(list, 2 ** 30, 256, max);
  let seen = 0;
  for (const p of packed) {
    let prefix = 0;
    for (let k = 0; k < p.tiles; k++) {
      expect(p.table[k * 8 + 6], `seed ${seed}: first tile of entry ${k}`).toBe(prefix);
      prefix += groups[p.table[k * 8 + 4]];
      seen++;
    }
    expect(p.groups, `seed ${seed}`).toBe(prefix);
    expect(p.groups <= max, `seed ${seed}`).toBe(true);
  }
  expect(seen).toBe(300);
}
