// The divergence report: what one comparison answers (docs/REPORT.md; JSON Schema docs/report.schema.json).
import type { FusedKernelId } from '../engine/fused-kernels';
import type { TimingSummary } from '../engine/timing';
import type { AdapterSummary } from '../gpu/device';
import type { IsolatedResult } from '../kernels/custom/isolated';
import type { NeoXConfig } from '../numeric/types';
import type { PlantedFault } from '../run/faults';
import type { Metric, RunSpec } from '../run/runspec';
import type { ErrorHistogram, FullMetrics } from './metrics';

/** The fp64-class oracle of a run: double-float on the GPU, or fp64 in JavaScript. */
export interface OracleInfo {
  kind: 'gpu' | 'cpu';
  /** Why this one, in words (the self-test's verdict, the adapter, or the caller's choice). */
  reason: string;
  /** The double-float self-test on this adapter, when it ran. */
  selfTest: { ok: boolean; worstRelErr: number; failures: string[]; ms: number } | null;
}

export const REPORT_SCHEMA = 'divergence-report/1';

/** A run of the engine in a report: which path, in which precision, with which fused kernels switched on. */
export interface RunOrigin {
  id: 'reference' | 'fused';
  source: 'engine';
  precision: string;
  kernels: FusedKernelId[];
}

export interface LayerResult {
  layer: number;
  /** Noise floor: reference path vs fp64 oracle (end to end). */
  floor: FullMetrics;
  /** Fused vs reference, end to end (error propagated from earlier layers included). */
  propagated: FullMetrics;
  /** Fused vs fp64 oracle, end to end. */
  fusedVsOracle: FullMetrics;
  /** Fused layer i run on the reference path's input to layer i, vs the reference layer i. */
  local: FullMetrics;
  /** Local noise floor: reference layer i on the oracle's input (as f32) vs the oracle's layer i. */
  localFloor: FullMetrics;
  /** The floor the ratio is taken against, in the chosen metric (larger = worse): max(floor, minimum floor). */
  floorValue: number;
  /** k × floorValue: above it the layer diverges. */
  threshold: number;
  /** propagated / floorValue in the chosen metric (for sqnrDb: the dB lost, as a power ratio). */
  ratio: number;
  localRatio: number;
  diverged: boolean;
  /** The local error alone exceeds k × local floor: the error is born in this layer. */
  born: boolean;
  /** Per-token relative L2 of the propagated error ([T]). */
  perToken: number[];
}

export interface TapResult {
  name: string;
  layer: number | null;
  op: string;
  /** 'fused-away' when the fused plan never writes this intermediate out. */
  status: 'compared' | 'fused-away';
  shape: number;
  vsReference: FullMetrics | null;
  refVsOracle: FullMetrics | null;
  histogram: ErrorHistogram | null;
}

export interface BisectionRow {
  kernel: FusedKernelId;
  reproduces: boolean;
  firstLayer: number | null;
  /** The chosen metric at that layer (or the worst layer when it does not reproduce). */
  value: number;
  ratio: number;
}

export interface DeterminismResult {
  identical: boolean;
  /** Tensors whose bits differ from the first fused run, with the schedule of the run that differed. */
  differences: { tensor: string; count: number; firstIndex: number; schedule: string }[];
  runs: { schedule: string; identical: boolean }[];
}

export interface GenerationResult {
  reference: { ids: number[]; text: string | null };
  fused: { ids: number[]; text: string | null };
  firstDifference: number | null;
}

export interface Report {
  schema: typeof REPORT_SCHEMA;
  createdAt: string;
  spec: RunSpec;
  model: { name: string; config: NeoXConfig };
  adapter: AdapterSummary;
  tokens: number[];
  plantedFaults: PlantedFault[];
  metric: Metric;
  k: number;
  layers: LayerResult[];
  firstDivergentLayer: number | null;
  /** The first layer whose error is born there (local), or null. */
  firstBornLayer: number | null;
  verdict: 'agree' | 'diverged';
  logits: { propagated: FullMetrics; floor: FullMetrics };
  taps: TapResult[];
  bisection: BisectionRow[] | null;
  determinism: DeterminismResult;
  generation: GenerationResult | null;
  timing: { reference: TimingSummary | null; fused: TimingSummary | null; speedup: number | null };
  /** Which oracle the floor was measured against, and why that one. */
  oracle: OracleInfo;
  /** Where the metrics were reduced: on the GPU (summaries read back), or by metrics.ts on a CPU adapter. */
  metricsOn: 'gpu' | 'cpu';
  /** Wall time of the phases, milliseconds. */
  durations: Record<string, number>;
  /** Where each compared run came from (the engine's two paths here; runs made elsewhere: runs-report.ts). */
  runs?: RunOrigin[];
  /**
   * With a custom kernel (spec.custom): how that source fared in its isolated test before the run (the page
   * runs it first), null when it was not tested alone. Absent for runs of the shipped kernels.
   */
  isolated?: IsolatedResult | null;
}

/** Results as they exist: the analysis first, then bisection and determinism, then each generated token. */
export type AnalysisPartial =
  | { kind: 'analysis'; report: Report }
  | { kind: 'bisection'; bisection: Report['bisection'] }
  | { kind: 'determinism'; determinism: Report['determinism'] }
  | { kind: 'token'; path: 'reference' | 'fused'; ids: number[]; text: string | null; total: number };
