// Planning of one GpuMetrics.record: every job checked, cut into tiles (never across a row), the records
// buffer laid out, and the tiles packed into dispatches whose buffer ranges fit the binding limits.

import { HIST_BINS, NO_HIST, RANGE_WORDS, REC_WORDS, ROW_WORDS } from '../kernels/metrics';
import { PRECISION_FORMATS, PRECISIONS } from '../numeric/precision';
import { TILE_EXTRA, TileList, WordList } from './gpu-metrics-tiles';
import type { BitDiffJob, CompareJob, Operand } from './gpu-metrics-types';

/** Elements per tile at most (WG 128 × 32) and at least (WG × 2). */
export const TILE = 4096;
export const MIN_TILE = 256;
/**
 * Tiles a job is cut into, about (more where its largest tile is reached): GpuMetrics' default. With a dispatch per
 * pair of taps, 512 beat 2048 (H200, bench RESULTS.md, 2026-11-27: a 410m compare's reductions 35.5 against 39.4 ms);
 * with a dozen taps a dispatch (gpu-metrics-slots.ts) every dispatch is full anyway and a tile's fixed cost (finding
 * its stretch, the workgroup's tree) is what fewer tiles save (H100, the same day: 410m 18.4 / 12.5 / 9.8 / 9.1 /
 * 8.9 ms at 512 / 256 / 128 / 64 / 32; 1.4b 22.0 / 16.3 / 14.2 / 13.3 / 13.3).
 */
export const TARGET_TILES = 64;
/** Tiles of one stretch at most (WebGPU's least maxComputeWorkgroupsPerDimension). */
const MAX_STRETCH_TILES = 65535;

/**
 * A job's tile: the power of two from MIN_TILE to TILE that cuts its n elements into about `target` tiles. Each
 * tile is a workgroup: a dispatch of a small tensor then fills the GPU with short tiles, rather than leaving most of
 * it idle while a few long ones run (on an H200 a dispatch of 64 tiles of 4096 took ~115 µs whatever its size).
 */
export function tileOf(n: number, least = MIN_TILE, target = TARGET_TILES): number {
  let t = least;
  while (t < TILE && t * target < n) t *= 2;
  return t;
}
/** Records folded by one pass-2 workgroup at most (one per thread). */
export const FAN = 128;

export interface JobLayout {
  n: number;
  /** Word offset of the job record. */
  rec: number;
  rows: number;
  /** Word offset of the first row summary. */
  rowBase: number;
  /** Word offset of the histogram, or -1. */
  hist: number;
}

export interface RecordPlan {
  jobs: JobLayout[];
  bitDiffs: { n: number; slot: number }[];
  /** Words read back: job records, row summaries, job histograms, bit-diff slots. */
  summaryWords: number;
  totalWords: number;
  compareTiles: TileList;
  bitTiles: TileList;
  /** Pass-2 ranges (RANGE_WORDS each) by level: a level reads what the levels before it wrote. */
  levels: Uint32Array[];
}

const MAX_N = 2 ** 31;

function fail(msg: string): never {
  throw new Error(`GpuMetrics: ${msg}`);
}

function checkCount(what: string, n: number): void {
  if (!Number.isInteger(n) || n < 0 || n >= MAX_N)
    fail(`${what}: element count ${n} is not an integer in [0, 2^31)`);
}

function checkBuffer(what: string, buf: GPUBuffer, offset: number, n: number, bytesPer: number): void {
  if (!buf || typeof buf.size !== 'number') fail(`${what}: no buffer`);
  if ((buf.usage & GPUBufferUsage.STORAGE) === 0) fail(`${what}: buffer '${buf.label}' lacks STORAGE usage`);
  if (!Number.isInteger(offset) || offset < 0) fail(`${what}: offset ${offset} is not a nonnegative integer`);
  const end = (offset + n) * bytesPer;
  if (end > buf.size)
    fail(
      `${what}: elements [${offset}, ${offset + n}) need ${end} bytes, buffer '${buf.label}' has ${buf.size}`,
    );
}

function checkOperand(what: string, op: Operand, n: number, allowDf: boolean): void {
  if (!op || (op.kind !== 'f32' && op.kind !== 'df')) fail(`${what}: kind must be 'f32' or 'df'`);
  if (op.kind === 'df' && !allowDf)
    fail(`${what}: the result under test must be f32 (df is for the baseline)`);
  checkBuffer(what, op.buffer, op.offset ?? 0, n, op.kind === 'df' ? 8 : 4);
}

/**
 * The least tile of a record: MIN_TILE, or larger (doubled up to TILE) until the tiles' records and histograms fit
 * `maxTileWords` words (the records buffer must fit a binding: many small tiles of many jobs could pass it).
 */
function leastTile(jobs: CompareJob[], maxTileWords: number, target: number): number {
  const words = (least: number) => {
    let w = 0;
    for (const job of jobs) {
      const per = tileOf(job.n, least, target);
      const rows = job.rows ?? 1;
      let tiles = 0;
      for (const s of job.segments ?? [job]) tiles += rows * Math.ceil(s.n / rows / per);
      w += tiles * (REC_WORDS + (job.histogram ? HIST_BINS : 0));
    }
    return w;
  };
  let least = MIN_TILE;
  while (least < TILE && words(least) > maxTileWords) least *= 2;
  return least;
}

/**
 * Lays out the records buffer and cuts every job into tiles (no smaller than needed to keep the tiles' records
 * within `maxTileWords`); throws one line naming the bad input.
 */
export function planRecord(
  jobs: CompareJob[],
  bitDiffs: BitDiffJob[],
  maxTileWords = Number.POSITIVE_INFINITY,
  target = TARGET_TILES,
  /** The caller's index of each job, for errors (the jobs may be the unique ones of a longer list). */
  names: readonly number[] = [],
): RecordPlan {
  const layouts: JobLayout[] = [];
  let words = jobs.length * REC_WORDS;
  // Row summaries, then job histograms, then bit-diff slots: together the part that is read back.
  jobs.forEach((job, j) => {
    const what = `job ${names[j] ?? j}`;
    checkCount(what, job.n);
    if (!PRECISIONS.includes(job.precision)) fail(`${what}: unknown precision '${job.precision}'`);
    const segs = job.segments ?? [{ a: job.a, b: job.b, n: job.n }];
    if (segs.length === 0) fail(`${what}: segments is empty`);
    let total = 0;
    segs.forEach((s, i) => {
      const sw = job.segments ? `${what} segment ${i}` : what;
      checkCount(sw, s.n);
      checkOperand(`${sw} a`, s.a, s.n, false);
      checkOperand(`${sw} b`, s.b, s.n, true);
      if (job.rows !== undefined && s.n % job.rows !== 0)
        fail(`${sw}: ${s.n} elements do not split into ${job.rows} rows`);
      total += s.n;
    });
    if (total !== job.n) fail(`${what}: n is ${job.n} but the segments hold ${total} elements`);
    if (job.rows !== undefined && (!Number.isInteger(job.rows) || job.rows < 1))
      fail(`${what}: rows ${job.rows} is not a positive integer`);
    layouts.push({ n: job.n, rec: j * REC_WORDS, rows: job.rows ?? 0, rowBase: 0, hist: -1 });
  });
  for (const l of layouts) {
    l.rowBase = words;
    words += l.rows * ROW_WORDS;
  }
  jobs.forEach((job, j) => {
    if (job.histogram) {
      layouts[j].hist = words;
      words += HIST_BINS;
    }
  });
  const bits = bitDiffs.map((bd, i) => {
    checkCount(`bit diff ${i}`, bd.n);
    checkBuffer(`bit diff ${i} a`, bd.a, 0, bd.n, 4);
    checkBuffer(`bit diff ${i} b`, bd.b, 0, bd.n, 4);
    const slot = words;
    words += 2;
    return { n: bd.n, slot };
  });
  const summaryWords = words;

  // Tiles: job by job, row by row, segment by segment, so each row's and each job's tiles are consecutive. The CPU
  // lists stretches (a row's tiles of one segment), not tiles: the shader finds its tile in its stretch.
  const compareTiles = new TileList(jobs.length);
  const least = leastTile(jobs, maxTileWords, target);
  const tileRec = (i: number) => summaryWords + i * REC_WORDS;
  const tileRanges: Array<[number, number]> = []; // per job: [first tile, tile count]
  const rowRanges: Array<Array<[number, number]>> = [];
  let tiles = 0;
  let histTiles = 0;
  for (const job of jobs) {
    const segs = job.segments ?? [{ a: job.a, b: job.b, n: job.n }];
    const rows = job.rows ?? 1;
    const per = tileOf(job.n, least, target);
    const first = tiles;
    const perRow: Array<[number, number]> = [];
    for (let r = 0; r < rows; r++) {
      const rowFirst = tiles;
      for (const s of segs) {
        const len = s.n / rows;
        const df = s.b.kind === 'df';
        const flags =
          (df ? 1 : 0) | (PRECISION_FORMATS[job.precision].storageCode << 1) | (job.histogram ? 8 : 0);
        const pair = compareTiles.pair(s.a.buffer, s.b.buffer);
        const bw = df ? 8 : 4;
        const chunk = per * MAX_STRETCH_TILES;
        for (let c = 0; c < len; c += chunk) {
          const count = Math.min(chunk, len - c);
          const groups = Math.ceil(count / per);
          const ae = (s.a.offset ?? 0) + r * len + c;
          const be = (s.b.offset ?? 0) + r * len + c;
          // The histogram word holds the first tile's histogram index until the histograms' base is known (below).
          const hist = job.histogram ? histTiles : NO_HIST;
          if (job.histogram) histTiles += groups;
          compareTiles.push(
            pair,
            ae * 4,
            (ae + count) * 4,
            be * bw,
            (be + count) * bw,
            count,
            flags,
            tileRec(tiles),
            hist,
            per,
            groups,
          );
          tiles += groups;
        }
      }
      perRow.push([rowFirst, tiles - rowFirst]);
    }
    tileRanges.push([first, tiles - first]);
    rowRanges.push(job.rows ? perRow : []);
  }
  words = tileRec(tiles);
  const histBase = words;
  words += histTiles * HIST_BINS;
  for (let i = 0; i < compareTiles.length; i++) {
    const h = i * TILE_EXTRA + 3;
    if (compareTiles.words[h] !== NO_HIST)
      compareTiles.words[h] = histBase + compareTiles.words[h] * HIST_BINS;
  }

  // A range of more than FAN records is first folded FAN at a time into intermediate records (a level of
  // its own, dispatched before the next): one workgroup folding thousands of tiles alone is slow (H100: a
  // 6.4 M-element job took 3 ms more as one range than as 49 jobs).
  const levels: WordList[] = [];
  const range = (first: number, count: number, dst: number, mode: number, hist: number) => {
    let src = tileRec(first);
    let cnt = count;
    let lvl = 0;
    while (cnt > FAN) {
      const groups = Math.ceil(cnt / FAN);
      const base = words;
      words += groups * REC_WORDS;
      const hbase = words;
      if (hist !== NO_HIST) words += groups * HIST_BINS;
      levels[lvl] ??= new WordList();
      for (let g = 0; g < groups; g++) {
        const h = hist === NO_HIST ? NO_HIST : hbase + g * HIST_BINS;
        levels[lvl].push5(
          src + g * FAN * REC_WORDS,
          Math.min(FAN, cnt - g * FAN),
          base + g * REC_WORDS,
          0,
          h,
        );
      }
      src = base;
      cnt = groups;
      lvl++;
    }
    levels[lvl] ??= new WordList();
    levels[lvl].push5(src, cnt, dst, mode, hist);
  };
  layouts.forEach((l, j) => {
    const [first, count] = tileRanges[j];
    range(first, count, l.rec, 0, l.hist < 0 ? NO_HIST : l.hist);
    rowRanges[j].forEach(([f, c], r) => {
      range(f, c, l.rowBase + r * ROW_WORDS, 1, NO_HIST);
    });
  });
  for (let i = 0; i < levels.length; i++) levels[i] ??= new WordList();

  const bitTiles = new TileList();
  bitDiffs.forEach((bd, i) => {
    const pair = bitTiles.pair(bd.a, bd.b);
    for (let c = 0; c < bd.n; c += TILE) {
      const count = Math.min(TILE, bd.n - c);
      bitTiles.push(pair, c * 4, (c + count) * 4, c * 4, (c + count) * 4, count, c, bits[i].slot);
    }
  });
  return {
    jobs: layouts,
    bitDiffs: bits,
    summaryWords,
    totalWords: words,
    compareTiles,
    bitTiles,
    levels: levels.map((l) => l.view()),
  };
}

/** Splits the pass-2 ranges into dispatches of at most `maxGroups` ranges. */
export function splitRanges(ranges: Uint32Array, maxGroups: number): Uint32Array[] {
  const out: Uint32Array[] = [];
  const per = maxGroups * RANGE_WORDS;
  for (let i = 0; i < ranges.length; i += per) out.push(ranges.slice(i, i + per));
  return out;
}
