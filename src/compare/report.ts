// The divergence report: what one comparison answers (docs/REPORT.md; JSON Schema docs/report.schema.json).
import type { FusedKernelId } from '../engine/fused-kernels';
import type { TimingSummary } from '../engine/timing';
import type { AdapterSummary } from '../gpu/device';
import type { IsolatedResult } from '../kernels/custom/isolated';
import type { LlamaFlavour, NeoXConfig } from '../numeric/types';
import type { PlantedFault } from '../run/faults';
import type { Metric, RunSpec } from '../run/runspec';
import type { Anatomy } from './causes/anatomy';
import type { CauseVerdict, OpKind } from './causes/types';
import type { DecodeCheck } from './decode-run-file';
import type { ErrorHistogram, FullMetrics } from './metrics';

import type { OracleInfo } from './oracle-info';

export type { OracleInfo };

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
  /** Why the texts part (parting.ts): null when they agree; absent in reports of older builds. */
  parting?: GenerationParting | null;
  /**
   * Each path's decode steps checked op by op as a run (decode-runs.ts): asked for (AnalyzeOptions.checkDecode,
   * RunSpec.checkDecode), or started by itself where the generation diverges (`decodeStarted: 'auto'`).
   */
  decode?: DecodeCheck[];
  /** Why the decode check ran: 'asked' (the checkbox, --check-decode) or 'auto' (the generation diverged). */
  decodeStarted?: 'asked' | 'auto';
  /**
   * Each path's cached decode against its own uncached forward over the same tokens, on the decode steps' rows
   * (generation-verdict.ts cachedVsFull); absent with fewer than two generated tokens and in older reports.
   */
  cached?: CachedCheck[];
  /**
   * What the generated text says (generation-verdict.ts): 'agree' (same tokens, each cached decode within the
   * floor of its uncached forward), 'near-tie' (the texts part on a near tie flipped by rounding: benign),
   * 'diverged' (they part otherwise, or a cached decode leaves its uncached forward). Absent in older reports.
   */
  verdict?: GenerationVerdict;
  /** The generation's finding in words: the parting and the decode finding told as one story. */
  words?: string;
}

export type GenerationVerdict = 'agree' | 'near-tie' | 'diverged';

/** One path's cached decode against its uncached forward over the same tokens (GenerationResult.cached). */
export interface CachedCheck {
  path: 'reference' | 'fused';
  /** ‖cached − uncached‖ / ‖uncached‖ over the decode steps' logits rows. */
  relL2: number;
  /** relL2 over the logits' floor (relative L2 of the reference's prompt logits against exact, at least u). */
  ratio: number;
  /** ratio ≤ k and every value finite. */
  within: boolean;
  /** The first decode step (1-based) whose row leaves k × the floor, or null. */
  firstStep: number | null;
}

export interface Report {
  schema: typeof REPORT_SCHEMA;
  createdAt: string;
  spec: RunSpec;
  /**
   * The model; `family` and `flavour` (absent in older reports: GPT-NeoX) name a Llama-family model, whose `config`
   * holds the dimensions it shares with GPT-NeoX (engine/family-llama.ts sharedDims).
   */
  model: { name: string; config: NeoXConfig; family?: 'gpt_neox' | 'llama'; flavour?: LlamaFlavour | null };
  adapter: AdapterSummary;
  tokens: number[];
  plantedFaults: PlantedFault[];
  metric: Metric;
  k: number;
  layers: LayerResult[];
  firstDivergentLayer: number | null;
  /** The first layer whose error is born there (local), or null. */
  firstBornLayer: number | null;
  /**
   * 'diverged': a layer of the prompt or its logits past k × the floor. 'generation-diverged': the prompt agrees,
   * but the generated text does not (generation.verdict 'diverged'). 'agree' otherwise (a near tie flipped by
   * rounding stays 'agree', with generation.verdict 'near-tie').
   */
  verdict: 'agree' | 'diverged' | 'generation-diverged';
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
  /**
   * At the first born layer: the op of the fused path the error is born at, its anatomy and the cause that explains
   * it (why-paths.ts); null where no layer is born or the taps were skipped; absent in reports made before it.
   */
  why?: PathWhy | null;
  /** Where each compared run came from (the engine's two paths here; runs made elsewhere: runs-report.ts). */
  runs?: RunOrigin[];
  /**
   * With a custom kernel (spec.custom): how that source fared in its isolated test before the run (the page
   * runs it first), null when it was not tested alone. Absent for runs of the shipped kernels.
   */
  isolated?: IsolatedResult | null;
}

/** The two-path report's answer to "why" at the first born layer. */
export interface PathWhy {
  layer: number;
  /** Every op of the layer checked on the fused path, in forward order, with its error over its floor. */
  checks: { id: string; op: OpKind; what: string; ratio: number; nonFinite: number }[];
  /** The first op past k × floor (null: no single op is; the layer's error comes from how they combine). */
  born: string | null;
  cause: CauseVerdict | null;
  anatomy: Anatomy | null;
  /** Taps of the layer whose bits differed between fused runs (a race), when any did. */
  race: { tensors: string[]; elements: number } | null;
  sentence: string;
}

/** Results as they exist: the analysis first, then bisection and determinism, then each generated token. */
export type AnalysisPartial =
  | { kind: 'analysis'; report: Report }
  | { kind: 'bisection'; bisection: Report['bisection'] }
  | { kind: 'determinism'; determinism: Report['determinism'] }
  | { kind: 'why'; why: PathWhy }
  | { kind: 'token'; path: 'reference' | 'fused'; ids: number[]; text: string | null; total: number };

// Why the generated texts part (computed by parting.ts).
export type PartingKind = 'near-tie' | 'divergence' | 'decode';

/** One path at the parting row (its full forward over the shared tokens; `chose` is its cached decode's id). */
export interface PartingSide {
  /** The id this path's generation chose at the parting step. */
  chose: number;
  /** The two largest logits of this path's full forward at the row, largest first (lowest id on ties). */
  top: { id: number; logit: number }[];
  /** top[0].logit − top[1].logit. */
  gap: number;
  /** This path's logit of its own choice minus its logit of the other path's choice (negative: it prefers the other). */
  margin: number;
  /** max |this row − exact row|. */
  error: number;
  /** error / floor. */
  ratio: number;
  /** The full forward's argmax is the id the cached decode chose. */
  fullAgrees: boolean;
}

export interface GenerationParting {
  /** Index among the new tokens of the first id that differs (= firstDifference). */
  step: number;
  /** The row whose logits chose it: prompt length + step − 1 (the prefill's last row for step 0). */
  row: number;
  /** Where the choice was made: 'prefill' for step 0, else decode step `step` (its one new row is `row`). */
  chosenIn: 'prefill' | 'decode';
  kind: PartingKind;
  /** The logits' floor at the row: max |reference − exact|, never below one rounding of the storage precision
   * (u × max |exact|). */
  floor: number;
  k: number;
  reference: PartingSide;
  fused: PartingSide;
  /** The exact logits of the two contested ids (the reference's choice, then the fused path's). */
  exact: { id: number; logit: number }[];
  /** The finding in words. */
  words: string;
}
