// Comparison metrics reduced on the GPU: FullMetrics, per-row relative L2 and the error histogram of
// src/compare/metrics.ts (the CPU oracle these are tested against, whose conventions they follow), and bitwise
// differences, with only small summaries read back — one map of one buffer per record().
//
// How (shaders/metrics/): pass 1 summarises tiles of 256 … 4096 elements (about 64 per job, never across a row),
// one workgroup each, in dispatches that bind up to 13 operand buffers (gpu-metrics-slots.ts: a table of stretches,
// each a run of one job's tiles found by the shader from its workgroup id and naming its operands' slots, so the
// CPU's work grows with jobs and rows, not tiles, and a compare's hundreds of tap buffers take tens of dispatches;
// the tiles' records are written and read by the GPU alone); pass 2 folds each job's and each row's tiles. Jobs
// that read the same operands are reduced once (uniqueJobs). Counts, maxUlp and the histogram are exact
// integers. An element whose operands are zero or of exponent −103 … 100 (almost all) has its difference formed
// exactly in f32 and its terms added to plain double-float sums kept at one exponent per thread (raised when a
// larger term comes); any other is decoded from its bits into extended values (an i32 exponent beside an f32
// pair), so squares of any f32 neither overflow nor underflow. Sums stay within ~1e-13 relative. maxAbs is
// exact: the GPU keeps the operands of the largest difference and the f64 difference is taken here. Values of
// the extreme exponents are decoded from their bits, so adapters that flush subnormals give the same answers.
import type { PipelineCache } from '../gpu/pipelines';
import { Program } from '../gpu/program';
import type { GpuTimer } from '../gpu/timestamps';
import { bitDiffTiles, compareTiles, HIST_BINS, RANGE_WORDS, reduceRecords } from '../kernels/metrics';
import { decodeBitDiff, decodeJob, summaryViews } from './gpu-metrics-decode';
import { binWords, edgeWords, histogramEdges } from './gpu-metrics-edges';
import { planRecord, splitRanges, TARGET_TILES } from './gpu-metrics-plan';
import { mergeDispatches, SLOTS_NARROW, slotsFor } from './gpu-metrics-slots';
import { packTiles } from './gpu-metrics-tiles';
import type { BitDiffJob, CompareJob, Operand, PendingMetrics } from './gpu-metrics-types';

export type {
  BitDiffJob,
  BitDiffOut,
  CompareJob,
  CompareOut,
  Operand,
  PendingMetrics,
} from './gpu-metrics-types';

/** Where one record()'s CPU time went and what it asks of the GPU (bench/comparisons.ts reads it). */
export interface RecordStats {
  planMs: number;
  packMs: number;
  encodeMs: number;
  tiles: number;
  dispatches: number;
  /** Bytes the dispatches read of the operands (each job's a and b, every time a job reads them). */
  operandBytes: number;
  /** Jobs reduced: those asked for, less the ones that repeat another's operands (reduced once). */
  jobs: number;
}

const ALIGN_WORDS = 64; // 256 bytes: a table region's start, for a binding offset

let edgeCache: Uint32Array | null = null;

/** The histogram's bin edges as the shaders read them, then its bins by exponent (computed once from the CPU
 * histogram). */
export function histogramEdgeWords(): Uint32Array {
  if (!edgeCache) {
    const triples = edgeWords(histogramEdges(HIST_BINS));
    const bins = binWords(triples);
    edgeCache = new Uint32Array(triples.length + bins.length);
    edgeCache.set(triples);
    edgeCache.set(bins, triples.length);
  }
  return edgeCache;
}

function alignUp(n: number, a: number): number {
  return Math.ceil(n / a) * a;
}

function mappedBuffer(device: GPUDevice, words: Uint32Array, usage: GPUBufferUsageFlags, label: string) {
  const buf = device.createBuffer({
    size: Math.max(16, words.byteLength),
    usage,
    label,
    mappedAtCreation: true,
  });
  new Uint32Array(buf.getMappedRange()).set(words);
  buf.unmap();
  return buf;
}

/**
 * The jobs with those that read the same operands (buffers, offsets, kinds, elements, segments, precision) made
 * one, which is then reduced with the rows and histogram any of them asks for (`of[j]`: job j's unique job; a job
 * without rows or histogram gets none back). A compare asks for some twice: a layer's output fused against the
 * reference (propagated per row, and as a tap with a histogram), the reference against the oracle (floor, tap).
 * Jobs asking for different row counts stay apart.
 */
export function uniqueJobs(jobs: CompareJob[]): { unique: CompareJob[]; of: number[] } {
  const ids = new Map<GPUBuffer, number>();
  const id = (b: GPUBuffer) => {
    let i = ids.get(b);
    if (i === undefined) ids.set(b, (i = ids.size));
    return i;
  };
  const opKey = (o: Operand) => `${o.kind}:${id(o.buffer)}:${o.offset ?? 0}`;
  const byKey = new Map<string, number>();
  const unique: CompareJob[] = [];
  const of = jobs.map((job) => {
    const segs = job.segments ?? [job];
    const key = `${job.precision}|${job.n}|${segs.map((s) => `${opKey(s.a)},${opKey(s.b)},${s.n}`).join(';')}`;
    const u = byKey.get(key);
    if (u !== undefined) {
      const uj = unique[u];
      if (uj.rows === undefined || job.rows === undefined || uj.rows === job.rows) {
        unique[u] = { ...uj, rows: uj.rows ?? job.rows, histogram: uj.histogram || job.histogram };
        return u;
      }
    }
    unique.push(job);
    if (u === undefined) byKey.set(key, unique.length - 1);
    return unique.length - 1;
  });
  return { unique, of };
}

export class GpuMetrics {
  private edges: GPUBuffer | null = null;

  /** `targetTiles`: about how many tiles a job is cut into (tileOf; the tests set fewer to mix tile sizes). */
  constructor(
    private readonly device: GPUDevice,
    private readonly pipelines: PipelineCache,
    private readonly targetTiles = TARGET_TILES,
    /** Pass 1's operand slots: the most the adapter allows (slotsFor), or SLOTS_NARROW where a test asks. */
    private readonly narrow = false,
  ) {}

  /** Records all jobs' reductions into `encoder` (no submit); summaries land in one small buffer. */
  record(
    encoder: GPUCommandEncoder,
    jobs: CompareJob[],
    bitDiffs: BitDiffJob[] = [],
    profile?: { timer?: GpuTimer; stats?: RecordStats },
  ): PendingMetrics {
    const device = this.device;
    const limits = device.limits;
    const tStart = performance.now();
    const maxBinding = limits.maxStorageBufferBindingSize;
    // Tiles no smaller than keeps their records within half the records' binding (and 128 MiB).
    const tileBytes = Math.min(maxBinding, limits.maxBufferSize, 2 ** 28) / 2;
    const { unique, of } = uniqueJobs(jobs);
    const firstOf = unique.map((_, u) => of.indexOf(u));
    const plan = planRecord(unique, bitDiffs, Math.floor(tileBytes / 4), this.targetTiles, firstOf);
    const tPlan = performance.now();
    const recBytes = plan.totalWords * 4;
    if (recBytes > maxBinding || recBytes > limits.maxBufferSize)
      throw new Error(
        `GpuMetrics: ${unique.length} jobs need ${recBytes} bytes of summaries, over the binding limit ${maxBinding}; record fewer at once`,
      );
    const align = limits.minStorageBufferOffsetAlignment;
    const maxGroups = limits.maxComputeWorkgroupsPerDimension;
    const slots = this.narrow ? SLOTS_NARROW : slotsFor(limits.maxStorageBuffersPerShaderStage);
    const compare = mergeDispatches(
      packTiles(plan.compareTiles, maxBinding, align, maxGroups),
      slots,
      maxGroups,
    );
    const bits = packTiles(plan.bitTiles, maxBinding, align, maxGroups);
    const rangeParts = plan.levels.map((l) => splitRanges(l, maxGroups));
    const tPack = performance.now();

    // One table buffer: every dispatch's descriptors from a 256-byte aligned start.
    const parts = [...compare.map((c) => c.table), ...bits.map((c) => c.table), ...rangeParts.flat()];
    const starts: number[] = [];
    let tableWords = 0;
    for (const p of parts) {
      starts.push(tableWords);
      tableWords = alignUp(tableWords + p.length, ALIGN_WORDS);
    }
    const tableData = new Uint32Array(Math.max(4, tableWords));
    parts.forEach((p, i) => {
      tableData.set(p, starts[i]);
    });
    const made: GPUBuffer[] = [];
    const keep = (b: GPUBuffer) => {
      made.push(b);
      return b;
    };
    const tables = keep(mappedBuffer(device, tableData, GPUBufferUsage.STORAGE, 'metrics.tables'));
    const tableRange = (i: number) => ({
      buffer: tables,
      offset: starts[i] * 4,
      size: Math.max(4, parts[i].byteLength),
    });

    // Records: the summary part starts poisoned (0xffffffff) so that anything unwritten fails decoding; the
    // bit-diff slots and tile records start at 0 (a fresh buffer).
    // Only the summary part is written from here: the tile and level records after it are written by the GPU
    // before they are read (the CPU neither fills nor copies them: at 410m they are ~10^5 records).
    const recData = new Uint32Array(plan.summaryWords);
    recData.fill(0xffffffff, 0, plan.bitDiffs.length ? plan.bitDiffs[0].slot : plan.summaryWords);
    const rec = keep(
      device.createBuffer({
        size: Math.max(16, plan.totalWords * 4),
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
        label: 'metrics.records',
      }),
    );
    if (recData.length > 0) device.queue.writeBuffer(rec, 0, recData);
    this.edges ??= mappedBuffer(device, histogramEdgeWords(), GPUBufferUsage.STORAGE, 'metrics.edges');
    const readBytes = Math.max(4, plan.summaryWords * 4);
    const readback = keep(
      device.createBuffer({
        size: readBytes,
        usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
        label: 'metrics.readback',
      }),
    );

    const program = new Program(device, this.pipelines);
    let part = 0;
    for (const c of compare) {
      const buffers = { tiles: tableRange(part++), edges: this.edges, rec };
      program.add(compareTiles('metrics.tiles', buffers, c.slots, slots, c.groups));
    }
    for (const c of bits) {
      program.add(
        bitDiffTiles('metrics.bitdiff', { a: c.a, b: c.b, tiles: tableRange(part++), slots: rec }, c.tiles),
      );
    }
    for (const level of rangeParts) {
      for (const r of level) {
        program.add(
          reduceRecords('metrics.reduce', { ranges: tableRange(part++), rec }, r.length / RANGE_WORDS),
        );
      }
    }
    program.encode(encoder, profile?.timer);
    if (profile?.stats) {
      let operandBytes = 0;
      for (const j of unique)
        for (const sg of j.segments ?? [j]) operandBytes += sg.n * (4 + (sg.b.kind === 'df' ? 8 : 4));
      for (const b of bitDiffs) operandBytes += b.n * 8;
      Object.assign(profile.stats, {
        planMs: tPlan - tStart,
        packMs: tPack - tPlan,
        encodeMs: performance.now() - tPack,
        tiles: plan.compareTiles.length + plan.bitTiles.length,
        dispatches: program.dispatchCount,
        operandBytes,
        jobs: unique.length,
      });
    }
    program.dispose();
    if (plan.summaryWords > 0) encoder.copyBufferToBuffer(rec, 0, readback, 0, plan.summaryWords * 4);

    let state: 'recorded' | 'read' | 'released' = 'recorded';
    const release = () => {
      if (state === 'released') return;
      state = 'released';
      for (const b of made) b.destroy();
    };
    return {
      read: async () => {
        if (state !== 'recorded') throw new Error(`GpuMetrics: summaries already ${state}`);
        state = 'read';
        await readback.mapAsync(GPUMapMode.READ);
        const data = readback.getMappedRange(0, readBytes).slice(0);
        readback.unmap();
        const views = summaryViews(data);
        const outs = plan.jobs.map((l, u) => decodeJob(views, l, firstOf[u]));
        return {
          compare: jobs.map((job, j) => {
            const o = outs[of[j]];
            return {
              metrics: o.metrics,
              perRow: job.rows ? o.perRow : null,
              histogram: job.histogram ? o.histogram : null,
            };
          }),
          bitDiff: plan.bitDiffs.map((b, i) => decodeBitDiff(views, b.slot, b.n, i)),
        };
      },
      release,
    };
  }

  /** Frees the edge table (records free their own buffers). */
  destroy(): void {
    this.edges?.destroy();
    this.edges = null;
  }
}
