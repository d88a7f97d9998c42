// The comparisons of one analysis phase as a list of GPU reduction jobs (src/compare/gpu-metrics.ts): each names
// its operands where they already live on the GPU (a path's tap, an oracle tensor), and the results come back in
// one readback. Split tensors (the LM head of a large vocabulary) are compared piece by piece into one result.
import type { GpuTap } from '../engine/batch';
import type { DfBuffer } from '../engine/oracle-df';
import type { Precision } from '../numeric/precision';
import type { BitDiffJob, BitDiffOut, CompareJob, CompareOut, Operand, PendingMetrics } from './gpu-metrics';

/** A tensor on the GPU to compare: a path's tap (f32) or an oracle tensor (double-float). */
export type Side = { f32: GpuTap } | { df: DfBuffer } | { zero: GPUBuffer; floats: number };

interface Piece {
  op: Operand;
  col0: number;
  cols: number;
}

function pieces(s: Side): { n: number; pieces: Piece[] | null; whole: Operand } {
  if ('zero' in s) return { n: s.floats, pieces: null, whole: { kind: 'f32', buffer: s.zero } };
  if ('f32' in s) {
    const t = s.f32;
    const ps = t.parts?.map((p) => ({
      op: { kind: 'f32' as const, buffer: p.buffer },
      col0: p.col0,
      cols: p.cols,
    }));
    return { n: t.floats, pieces: ps && ps.length > 1 ? ps : null, whole: { kind: 'f32', buffer: t.buffer } };
  }
  const t = s.df;
  const ps = t.parts?.map((p) => ({
    op: { kind: 'df' as const, buffer: p.buffer },
    col0: p.col0,
    cols: p.cols,
  }));
  return { n: t.n, pieces: ps && ps.length > 1 ? ps : null, whole: { kind: 'df', buffer: t.buffer } };
}

/**
 * The segments of a [T, width] tensor split by columns: both sides must be split alike (the plan and the oracle cut
 * the LM head at the same rows); anything else is refused rather than compared wrongly.
 */
function pairPieces(a: Piece[] | null, b: Piece[] | null, T: number, what: string) {
  if (!a && !b) return null;
  const same =
    a && b && a.length === b.length && a.every((p, i) => p.col0 === b[i].col0 && p.cols === b[i].cols);
  if (!same) throw new Error(`${what}: the two sides are split into different column pieces`);
  return a.map((p, i) => ({ a: p.op, b: b[i].op, n: T * p.cols }));
}

export class JobList {
  private jobs: CompareJob[] = [];
  private bits: BitDiffJob[] = [];
  private bitMaps: ((r: BitDiffOut[]) => BitDiffOut)[] = [];

  constructor(
    private readonly T: number,
    private readonly precision: Precision,
  ) {}

  /** Adds a comparison of `a` against baseline `b`; returns its index in the results. */
  compare(a: Side, b: Side, what: string, o: { perRow?: boolean; histogram?: boolean } = {}): number {
    const pa = pieces(a);
    const pb = pieces(b);
    if (pa.n !== pb.n) throw new Error(`${what}: ${pa.n} elements against ${pb.n}`);
    const segments = pairPieces(pa.pieces, pb.pieces, this.T, what);
    this.jobs.push({
      a: pa.whole,
      b: pb.whole,
      n: pa.n,
      segments: segments ?? undefined,
      rows: o.perRow && !segments ? this.T : undefined,
      precision: this.precision,
      histogram: o.histogram,
    });
    return this.jobs.length - 1;
  }

  /** Adds a bitwise comparison of two f32 taps of the same shape; returns its index in the bit results. */
  bitDiff(a: GpuTap, b: GpuTap): number {
    const T = this.T;
    if (a.floats !== b.floats) throw new Error(`${a.name}: ${a.floats} elements against ${b.floats}`);
    const pa = a.parts && a.parts.length > 1 ? a.parts : null;
    const pb = b.parts && b.parts.length > 1 ? b.parts : null;
    if (!pa || !pb) {
      this.bits.push({ a: a.buffer, b: b.buffer, n: a.floats });
      const k = this.bits.length - 1;
      this.bitMaps.push((r) => r[k]);
    } else {
      const width = a.floats / T;
      const ks = pa.map((p, i) => {
        this.bits.push({ a: p.buffer, b: pb[i].buffer, n: T * p.cols });
        return { k: this.bits.length - 1, col0: p.col0, cols: p.cols };
      });
      // Counts add up; the first differing index of the whole [T, width] tensor is the smallest one mapped back.
      this.bitMaps.push((r) => {
        let count = 0;
        let first = -1;
        for (const { k, col0, cols } of ks) {
          count += r[k].count;
          if (r[k].firstIndex >= 0) {
            const e = r[k].firstIndex;
            const idx = Math.floor(e / cols) * width + col0 + (e % cols);
            if (first < 0 || idx < first) first = idx;
          }
        }
        return { count, firstIndex: first };
      });
    }
    return this.bitMaps.length - 1;
  }

  record(metrics: MetricsEngine, encoder: GPUCommandEncoder): PendingJobs {
    const pending: PendingMetrics = metrics.record(encoder, this.jobs, this.bits);
    const maps = this.bitMaps;
    return {
      async read() {
        const r = await pending.read();
        return { compare: r.compare, bitDiff: maps.map((m) => m(r.bitDiff)) };
      },
      release: () => pending.release(),
    };
  }
}

/** What reduces the jobs: GpuMetrics (on the GPU) or CpuMetrics (metrics.ts on read-back operands). */
export interface MetricsEngine {
  record(encoder: GPUCommandEncoder, jobs: CompareJob[], bitDiffs?: BitDiffJob[]): PendingMetrics;
}

export interface PendingJobs {
  read(): Promise<{ compare: CompareOut[]; bitDiff: BitDiffOut[] }>;
  release(): void;
}
