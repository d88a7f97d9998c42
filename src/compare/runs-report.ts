// The report of an analysis of runs from elsewhere (docs/RUNS.md): where each run came from, its per-layer curves
// against the exact forward, every local check, and the verdict in words, naming the op by the dump's own module path.
import type { AdapterSummary } from '../gpu/device';
import type { Handoff } from '../model/run-file';
import type { RunGeneration } from '../model/run-generation';
import type { DType, LlamaFlavour, NeoXConfig } from '../numeric/types';
import type { Metric } from '../run/runspec';
import type { Anatomy } from './causes/anatomy';
import type { CauseVerdict } from './causes/types';
import type { FullMetrics } from './metrics';
import type { OracleInfo } from './oracle-info';
import type { MissingCheck, OpCheck } from './run-checks';
import { stepPrefix } from './run-rows';

export const RUNS_REPORT_SCHEMA = 'divergence-runs-report/1';

/** Where two generations' texts part, and whether the choice was a near tie (runs-verdict.ts partingOfRuns). */
export interface RunsParting {
  /** The rows compared: 0 … rows − 1, the ones both runs share; `held`: the rows each run holds. */
  rows: number;
  held: { A: number; B: number };
  /** The last shared row (position), whose logits chose differently; its decode step (0: the prefill's last row). */
  row: number;
  step: number;
  /** The id each run chose there (null where its file does not say). */
  chose: { A: number | null; B: number | null };
  /** Each run's own logit of its choice minus the other's (null without its logits). */
  margin: { A: number | null; B: number | null };
  /** The exact forward's logits of A's and B's choice at that row, and the gap (A's minus B's). */
  exact: { A: number; B: number; gap: number } | null;
  /** How far an fp32 path's logits may be from exact (the reference path's, never below the storage's rounding). */
  floor: number;
  /** The exact gap within k × floor: a near tie that rounding may flip (benign). */
  nearTie: boolean | null;
  words: string;
}

export interface RunSourceInfo {
  /** 'A' or 'B'. */
  id: string;
  file: string;
  sha256: string | null;
  label: string | null;
  device: string | null;
  dtype: string | null;
  /** The widest storage dtype among its tensors: the floor is never below one rounding of it. */
  storage: DType;
  /** Slots filled (a tensor and its aliases count once). */
  tensors: number;
  /** Names the contract does not use. */
  ignored: string[];
  /** Two names of one slot that hold different tensors. */
  handoffs: Handoff[];
  checks: number;
  /** Checks that could not run for lack of taps: the answer is narrowed by these. */
  missing: MissingCheck[];
  /** A run of a generation: the prefill's length and the generated ids (absent or null otherwise). */
  generation?: RunGeneration | null;
}

/** One check of one run: the op (run-checks.ts), and what it measured. */
export interface RunCheckResult extends Pick<OpCheck, 'id' | 'op' | 'layer' | 'module' | 'what'> {
  run: string;
  /** The run's own tensor names the check read and compared. */
  inputs: string[];
  output: string;
  /** The run's output against the exact op on the run's own inputs. */
  error: FullMetrics;
  /** The engine's fp32 reference kernel measured the same way at the same op. */
  floor: FullMetrics;
  floorValue: number;
  ratio: number;
  nonFinite: number;
  /** ratio > k, or NaN/Inf in the output: the error is born at this op. */
  born: boolean;
  /** At a run's first born op: what would explain the error, and where in the tensor it lives. */
  cause?: CauseVerdict | null;
  anatomy?: Anatomy | null;
  /** The first row (position) whose error passes k × the floor (run-rows.ts), or null; absent where not measured. */
  firstRow?: number | null;
  /**
   * The last row of the unbroken stretch of rows past k × the floor from `firstRow` (run-rows.ts rowsPast): every
   * row of the prompt, or every row from some position on, is said so. Absent in older reports (one row).
   */
  pastTo?: number | null;
}

export interface CurvePoint {
  metrics: FullMetrics;
  ratio: number;
  diverged: boolean;
}

/** One point of the per-layer curves: embed, layers.i.out, final_norm, logits. */
export interface RunCurve {
  slot: string;
  /** The engine's reference path against the exact forward (the noise floor). */
  floor: FullMetrics;
  floorValue: number;
  /** Each run against the exact forward (null where the run lacks the tensor). */
  runs: Record<string, CurvePoint | null>;
  bVsA: CurvePoint | null;
}

export interface RunFinding {
  run: string;
  diverged: boolean;
  check: string | null;
  layer: number | null;
  module: string | null;
  sentence: string;
  /** At the born op (absent where nothing is born, null where NaN/Inf leave nothing to score). */
  cause?: CauseVerdict | null;
  anatomy?: Anatomy | null;
}

export interface RunsReport {
  schema: typeof RUNS_REPORT_SCHEMA;
  createdAt: string;
  /**
   * The model; `family` and `flavour` (absent: GPT-NeoX) name a Llama-family model, whose `config` holds the
   * dimensions it shares with GPT-NeoX (engine/family-llama.ts sharedDims).
   */
  model: { name: string; config: NeoXConfig; family?: 'gpt_neox' | 'llama'; flavour?: LlamaFlavour | null };
  adapter: AdapterSummary;
  tokens: number[];
  metric: Metric;
  k: number;
  oracle: OracleInfo;
  metricsOn: 'gpu' | 'cpu';
  floorFrom: string;
  runs: RunSourceInfo[];
  curves: RunCurve[];
  checks: RunCheckResult[];
  verdict: 'agree' | 'diverged';
  /** Per run: its first divergent op (or that it agrees), in words. */
  findings: RunFinding[];
  /** The whole answer in one line. */
  sentence: string;
  /**
   * Present where only the rows from..T−1 were checked (a decode check: the prompt's rows are the two-path
   * compare's); every comparison, floor and metric is over those rows; `note` says who checked the rows before.
   */
  rows?: { from: number; note: string };
  /**
   * Two runs of generations whose texts part (run-generation.ts partedPair): compared on the rows they share, the
   * last of which chose differently; absent otherwise.
   */
  parting?: RunsParting;
  durations: Record<string, number>;
}

const times = (r: number) => (Number.isFinite(r) ? `${r.toPrecision(2)}×` : 'infinitely far past');

function runName(s: RunSourceInfo): string {
  return `run ${s.id}${s.label ? ` (${s.label})` : ''}`;
}

/**
 * The verdict: per run, the first check (in forward order) whose error is born there, said in words; `T` is the
 * runs' number of rows (a finding in a run of a generation names its rows past the floor, to the last row or not).
 */
export function verdictOf(
  sources: RunSourceInfo[],
  checks: RunCheckResult[],
  curves: RunCurve[],
  k: number,
  T: number,
): Pick<RunsReport, 'verdict' | 'findings' | 'sentence'> {
  const findings: RunFinding[] = sources.map((s) => {
    const mine = checks.filter((c) => c.run === s.id);
    const first = mine.find((c) => c.born);
    const narrowed =
      s.missing.length > 0 ? ` (${s.missing.length} checks could not run for lack of taps)` : '';
    if (first) {
      const where = `${stepPrefix(s, first, T)}${first.layer === null ? '' : `layer ${first.layer}: `}`;
      const before = mine.slice(0, mine.indexOf(first));
      const agreeBefore =
        before.length === 0
          ? 'it is the first op checked'
          : `every op checked before it agrees (${before.length})`;
      const what =
        first.nonFinite > 0
          ? `${first.what} (${first.module}) writes ${first.nonFinite} NaN/Inf values into ${first.output}`
          : `${first.what} (${first.module}): its output ${first.output} is ${times(first.ratio)} its floor away from the exact result on its own recorded inputs`;
      return {
        run: s.id,
        diverged: true,
        check: first.id,
        layer: first.layer,
        module: first.module,
        sentence: `${runName(s)}, ${where}${what}; ${agreeBefore}${narrowed}.`,
      };
    }
    /** A finding no single check names. */
    const overall = (diverged: boolean, sentence: string): RunFinding => ({
      run: s.id,
      diverged,
      check: null,
      layer: null,
      module: null,
      sentence: `${runName(s)}${sentence}`,
    });
    const handoff = s.handoffs[0];
    if (handoff)
      return overall(
        true,
        `: every local check agrees, but ${handoff.other} differs from ${handoff.kept} in ${handoff.differing} elements: the tensor changed between those two modules.`,
      );
    // The end-to-end error decides only where no layer could be checked locally: a run whose every op is within
    // its floor, stored in fp16/bf16, accumulates its own dtype's rounding past k × the fp32 path's floor.
    const drift = curves.find((c) => c.runs[s.id]?.diverged);
    const layerChecks = checks.some((c) => c.run === s.id && c.layer !== null);
    if (drift && !layerChecks)
      return overall(
        true,
        `: no layer could be checked locally, and its ${drift.slot} is ${times(drift.runs[s.id]!.ratio)} the end-to-end floor away from the exact forward${narrowed}.`,
      );
    const drifted = drift
      ? `; its ${drift.slot} drifts to ${times(drift.runs[s.id]!.ratio)} the fp32 path's end-to-end floor, the rounding of its ${s.storage} ops adding up`
      : '';
    const worst = checks
      .filter((c) => c.run === s.id)
      .reduce<RunCheckResult | null>((w, c) => (w === null || c.ratio > w.ratio ? c : w), null);
    return overall(
      false,
      ` agrees with the exact forward: all ${s.checks} local checks within ${k}× their floors${
        worst ? ` (closest: ${worst.module} at ${times(worst.ratio)})` : ''
      }${drifted}${narrowed}.`,
    );
  });
  const diverged = findings.some((f) => f.diverged);
  return {
    verdict: diverged ? 'diverged' : 'agree',
    findings,
    sentence: findings.map((f) => f.sentence).join(' '),
  };
}
