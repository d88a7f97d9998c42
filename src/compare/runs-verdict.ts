// The runs analysis's verdict on what its comparisons measured (analyze-runs.ts): each run's checks against the
// floors' run at the same op (ratio, born, the first row past k × floor) and the propagated curves per slot.
import type { Precision } from '../numeric/precision';
import type { Metric } from '../run/runspec';
import { effectiveFloor, nonFiniteIn, ratioOf } from './floor';
import type { FullMetrics } from './metrics';
import type { OpCheck } from './run-checks';
import { firstRowPast } from './run-rows';
import type { RunCheckResult, RunsReport } from './runs-report';

/** A run as the verdict reads it. */
export interface ScoredRun {
  id: string;
  precision: Precision;
  checks: OpCheck[];
  names: (slot: string) => string;
}

/** What the comparisons measured: each job's metrics and per-row errors, by job index (−1: no job). */
export interface RunsMeasured {
  got: (j: number) => FullMetrics;
  rows: (j: number) => Parameters<typeof firstRowPast>[0];
  /** Per run (the floors' run first), per check: its error's job and its scale's. */
  checkJobs: { err: number; scale: number }[][];
  curves: ({ slot: string; floor: number; scale: number; runs: number[]; bVsA: number } | null)[];
}

const scaleOf = (m: RunsMeasured, j: number) => (j < 0 ? 0 : m.got(j).maxAbs);

/** Every check of every run against the floors' run's same check; rows are the whole run's (checked from `from`). */
export function checkResults(
  files: ScoredRun[],
  ref: ScoredRun,
  results: RunsMeasured,
  metric: Metric,
  k: number,
  from: number,
): RunCheckResult[] {
  const { got } = results;
  const refChecks = new Map(ref.checks.map((c, i) => [c.id, results.checkJobs[0][i]]));
  return files.flatMap((run, r) =>
    run.checks.map((c, i) => {
      const jobs = results.checkJobs[r + 1][i];
      const floorJob = refChecks.get(c.id)!;
      const error = got(jobs.err);
      const floor = got(floorJob.err);
      const ratio = ratioOf(error, floor, metric, run.precision, scaleOf(results, jobs.scale));
      const nonFinite = nonFiniteIn(error);
      const firstRow = firstRowPast(
        results.rows(jobs.err),
        results.rows(floorJob.err),
        floor.relL2,
        run.precision,
        k,
      );
      return {
        run: run.id,
        id: c.id,
        op: c.op,
        layer: c.layer,
        module: c.module,
        what: c.what,
        inputs: c.inputs.map(run.names),
        output: run.names(c.output),
        error,
        floor,
        floorValue: effectiveFloor(floor, metric, run.precision, scaleOf(results, jobs.scale)),
        ratio,
        nonFinite,
        born: ratio > k || nonFinite > 0,
        // A row of the whole run (the checked rows start at `from`).
        firstRow: firstRow === null ? null : from + firstRow,
      };
    }),
  );
}

/** Each slot's propagated error of every run (and of B against A) over the floors' run's. */
export function curveResults(
  files: ScoredRun[],
  results: RunsMeasured,
  metric: Metric,
  k: number,
): RunsReport['curves'] {
  const { got } = results;
  return results.curves.flatMap((c) => {
    if (!c) return [];
    const floor = got(c.floor);
    const scale = scaleOf(results, c.scale);
    const per = (j: number, precision: Precision) => {
      if (j < 0) return null;
      const m = got(j);
      const ratio = ratioOf(m, floor, metric, precision, scale);
      return { metrics: m, ratio, diverged: ratio > k || nonFiniteIn(m) > 0 };
    };
    const lowest = files.reduce<Precision>((p, r) => (r.precision === 'fp32' ? p : r.precision), 'fp32');
    return [
      {
        slot: c.slot,
        floor,
        floorValue: effectiveFloor(floor, metric, 'fp32', scale),
        runs: Object.fromEntries(files.map((r, j) => [r.id, per(c.runs[j], r.precision)])),
        bVsA: per(c.bVsA, lowest),
      },
    ];
  });
}
