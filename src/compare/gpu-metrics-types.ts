// What the GPU metrics take and give: the jobs (tensors to compare, buffers to diff bit by bit) and their
// results. Apart from gpu-metrics.ts so that its planner and decoder (gpu-metrics-plan.ts, -decode.ts) name them
// without importing the class that uses both.
import type { Precision } from '../numeric/precision';
import type { ErrorHistogram, FullMetrics } from './metrics';

/** A tensor in a GPU buffer: f32 elements, or double-float pairs (hi, lo) read as the f64 hi + lo. */
export type Operand = { kind: 'f32' | 'df'; buffer: GPUBuffer; offset?: number }; // offset in elements

export interface CompareJob {
  /** The result under test (f32). */
  a: Operand;
  /** The baseline. A double-float baseline must be normalized (|lo| ≤ ulp(hi)/2, the oracle's format): the
   * f64 rounding of hi + lo is reproduced for such pairs, and the square drops lo², below 2^-46 relative. */
  b: Operand;
  /** Elements. A tensor split by columns is given as several segments reduced into one result. */
  n: number;
  /**
   * When set, these are the tensor's pieces (a and b above are then not read) and n must be their total.
   * With `rows`, row r of the result is row r of every segment (each segment holds rows × (its n / rows)).
   */
  segments?: { a: Operand; b: Operand; n: number }[];
  /** When set, also per-row relative L2 over rows of n / rows elements (per token). */
  rows?: number;
  precision: Precision;
  /** errorHistogram's bins (40). */
  histogram?: boolean;
}

export interface CompareOut {
  metrics: FullMetrics;
  perRow: Float64Array | null;
  histogram: ErrorHistogram | null;
}

/** u32-wise comparison of the first n words of two buffers. */
export interface BitDiffJob {
  a: GPUBuffer;
  b: GPUBuffer;
  n: number;
}

export interface BitDiffOut {
  count: number;
  /** -1 when identical. */
  firstIndex: number;
}

export interface PendingMetrics {
  /** After the encoder was submitted: maps the summary buffer once and decodes every job. */
  read(): Promise<{ compare: CompareOut[]; bitDiff: BitDiffOut[] }>;
  /** Frees the buffers of this record (also after a read). */
  release(): void;
}
