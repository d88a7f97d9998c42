// Planning of one GpuMetrics.record: every job checked, cut into tiles (never across a row), the records
// buffer laid out, and the tiles packed into dispatches whose buffer ranges fit the binding limits.

import { HIST_BINS, NO_HIST, RANGE_WORDS, REC_WORDS, ROW_WORDS, TILE_WORDS } from '../kernels/metrics';
import { PRECISIONS, type Precision } from '../numeric/precision';
import type { BitDiffJob, CompareJob, Operand } from './gpu-metrics-types';

/** Elements per tile (WG 128 × 32). */
export const TILE = 4096;
/** Records folded by one pass-2 workgroup at most (one per thread). */
export const FAN = 128;

export interface TileDesc {
  a: GPUBuffer;
  b: GPUBuffer;
  /** Byte ranges read from a and b. */
  aByte: number;
  aEnd: number;
  bByte: number;
  bEnd: number;
  /** Words 2 … 7 of the descriptor (count, flags, record, histogram / count, base, slot). */
  words: number[];
}

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
  compareTiles: TileDesc[];
  bitTiles: TileDesc[];
  /** Pass-2 ranges (RANGE_WORDS each) by level: a level reads what the levels before it wrote. */
  levels: number[][];
}

const PREC_CODE: Record<Precision, number> = { fp32: 0, fp16: 1, fp16acc: 1, bf16: 2 };
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

/** Lays out the records buffer and cuts every job into tiles; throws one line naming the bad input. */
export function planRecord(jobs: CompareJob[], bitDiffs: BitDiffJob[]): RecordPlan {
  const layouts: JobLayout[] = [];
  let words = jobs.length * REC_WORDS;
  // Row summaries, then job histograms, then bit-diff slots: together the part that is read back.
  jobs.forEach((job, j) => {
    const what = `job ${j}`;
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

  // Tiles: job by job, row by row, segment by segment, so each row's and each job's tiles are consecutive.
  const compareTiles: TileDesc[] = [];
  const tileRec = (i: number) => summaryWords + i * REC_WORDS;
  const tileRanges: Array<[number, number]> = []; // per job: [first tile, tile count]
  const rowRanges: Array<Array<[number, number]>> = [];
  let histTiles = 0;
  for (const job of jobs) {
    const segs = job.segments ?? [{ a: job.a, b: job.b, n: job.n }];
    const rows = job.rows ?? 1;
    const first = compareTiles.length;
    const perRow: Array<[number, number]> = [];
    for (let r = 0; r < rows; r++) {
      const rowFirst = compareTiles.length;
      for (const s of segs) {
        const len = s.n / rows;
        const df = s.b.kind === 'df';
        const flags = (df ? 1 : 0) | (PREC_CODE[job.precision] << 1) | (job.histogram ? 8 : 0);
        for (let c = 0; c < len; c += TILE) {
          const count = Math.min(TILE, len - c);
          const ae = (s.a.offset ?? 0) + r * len + c;
          const be = (s.b.offset ?? 0) + r * len + c;
          const bw = df ? 8 : 4;
          const hist = job.histogram ? histTiles++ : -1;
          compareTiles.push({
            a: s.a.buffer,
            b: s.b.buffer,
            aByte: ae * 4,
            aEnd: (ae + count) * 4,
            bByte: be * bw,
            bEnd: (be + count) * bw,
            words: [count, flags, tileRec(compareTiles.length), hist],
          });
        }
      }
      perRow.push([rowFirst, compareTiles.length - rowFirst]);
    }
    tileRanges.push([first, compareTiles.length - first]);
    rowRanges.push(job.rows ? perRow : []);
  }
  words = tileRec(compareTiles.length);
  const histBase = words;
  words += histTiles * HIST_BINS;
  for (const t of compareTiles) t.words[3] = t.words[3] < 0 ? NO_HIST : histBase + t.words[3] * HIST_BINS;

  // A range of more than FAN records is first folded FAN at a time into intermediate records (a level of
  // its own, dispatched before the next): one workgroup folding thousands of tiles alone is slow (H100: a
  // 6.4 M-element job took 3 ms more as one range than as 49 jobs).
  const levels: number[][] = [];
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
      levels[lvl] ??= [];
      for (let g = 0; g < groups; g++) {
        const h = hist === NO_HIST ? NO_HIST : hbase + g * HIST_BINS;
        levels[lvl].push(
          src + g * FAN * REC_WORDS,
          Math.min(FAN, cnt - g * FAN),
          base + g * REC_WORDS,
          0,
          h,
          0,
          0,
          0,
        );
      }
      src = base;
      cnt = groups;
      lvl++;
    }
    levels[lvl] ??= [];
    levels[lvl].push(src, cnt, dst, mode, hist, 0, 0, 0);
  };
  layouts.forEach((l, j) => {
    const [first, count] = tileRanges[j];
    range(first, count, l.rec, 0, l.hist < 0 ? NO_HIST : l.hist);
    rowRanges[j].forEach(([f, c], r) => {
      range(f, c, l.rowBase + r * ROW_WORDS, 1, NO_HIST);
    });
  });
  for (let i = 0; i < levels.length; i++) levels[i] ??= [];

  const bitTiles: TileDesc[] = [];
  bitDiffs.forEach((bd, i) => {
    for (let c = 0; c < bd.n; c += TILE) {
      const count = Math.min(TILE, bd.n - c);
      bitTiles.push({
        a: bd.a,
        b: bd.b,
        aByte: c * 4,
        aEnd: (c + count) * 4,
        bByte: c * 4,
        bEnd: (c + count) * 4,
        words: [count, c, bits[i].slot],
      });
    }
  });
  return {
    jobs: layouts,
    bitDiffs: bits,
    summaryWords,
    totalWords: words,
    compareTiles,
    bitTiles,
    levels,
  };
}

export interface PackedDispatch {
  a: GPUBufferBinding;
  b: GPUBufferBinding;
  /** Descriptors (TILE_WORDS each) with word offsets relative to the bindings. */
  table: Uint32Array;
  tiles: number;
}

/**
 * Groups tiles by their buffer pair and packs each group into dispatches whose a and b ranges (bound from an
 * aligned start) stay within `maxBinding` bytes and whose tile count stays within `maxGroups`.
 */
export function packTiles(
  tiles: TileDesc[],
  maxBinding: number,
  align: number,
  maxGroups: number,
): PackedDispatch[] {
  const groups = new Map<GPUBuffer, Map<GPUBuffer, TileDesc[]>>();
  for (const t of tiles) {
    let byB = groups.get(t.a);
    if (!byB) groups.set(t.a, (byB = new Map()));
    let list = byB.get(t.b);
    if (!list) byB.set(t.b, (list = []));
    list.push(t);
  }
  const out: PackedDispatch[] = [];
  const emit = (list: TileDesc[]) => {
    let [aStart, bStart, aEnd, bEnd] = [list[0].aByte, list[0].bByte, 0, 0];
    for (const t of list) {
      aStart = Math.min(aStart, t.aByte);
      bStart = Math.min(bStart, t.bByte);
      aEnd = Math.max(aEnd, t.aEnd);
      bEnd = Math.max(bEnd, t.bEnd);
    }
    aStart = Math.floor(aStart / align) * align;
    bStart = Math.floor(bStart / align) * align;
    const table = new Uint32Array(list.length * TILE_WORDS);
    list.forEach((t, i) => {
      table[i * TILE_WORDS] = (t.aByte - aStart) / 4;
      table[i * TILE_WORDS + 1] = (t.bByte - bStart) / 4;
      table.set(t.words, i * TILE_WORDS + 2);
    });
    out.push({
      a: { buffer: list[0].a, offset: aStart, size: Math.max(4, aEnd - aStart) },
      b: { buffer: list[0].b, offset: bStart, size: Math.max(4, bEnd - bStart) },
      table,
      tiles: list.length,
    });
  };
  for (const byB of groups.values()) {
    for (const list of byB.values()) {
      const sorted = [...list].sort((x, y) => x.aByte - y.aByte);
      let cur: TileDesc[] = [];
      let aMin = 0;
      let bMin = 0;
      let aMax = 0;
      let bMax = 0;
      for (const t of sorted) {
        const na = Math.min(aMin, t.aByte);
        const nb = Math.min(bMin, t.bByte);
        const fits =
          cur.length > 0 &&
          cur.length < maxGroups &&
          Math.max(aMax, t.aEnd) - Math.floor(na / align) * align <= maxBinding &&
          Math.max(bMax, t.bEnd) - Math.floor(nb / align) * align <= maxBinding;
        if (cur.length > 0 && !fits) {
          emit(cur);
          cur = [];
        }
        if (cur.length === 0) {
          aMin = t.aByte;
          bMin = t.bByte;
          aMax = t.aEnd;
          bMax = t.bEnd;
        } else {
          aMin = na;
          bMin = nb;
          aMax = Math.max(aMax, t.aEnd);
          bMax = Math.max(bMax, t.bEnd);
        }
        cur.push(t);
      }
      if (cur.length > 0) emit(cur);
    }
  }
  return out;
}

/** Splits the pass-2 ranges into dispatches of at most `maxGroups` ranges. */
export function splitRanges(ranges: number[], maxGroups: number): Uint32Array[] {
  const out: Uint32Array[] = [];
  const per = maxGroups * RANGE_WORDS;
  for (let i = 0; i < ranges.length; i += per) out.push(Uint32Array.from(ranges.slice(i, i + per)));
  return out;
}
