// The runs analysis's verdict on what its comparisons measured (analyze-runs.ts): each run's checks against the
// floors' run at the same op (ratio, born, the first row past k × floor) and the propagated curves per slot.
import type { RunFile } from '../model/run-file';
import { type PartedPair, rowWords } from '../model/run-generation';
import { type Precision, storageUnitRoundoff } from '../numeric/precision';
import type { Metric } from '../run/runspec';
import { effectiveFloor, nonFiniteIn, ratioOf } from './floor';
import type { FullMetrics } from './metrics';
import type { OpCheck } from './run-checks';
import { rowsPast } from './run-rows';
import type { RunCheckResult, RunsParting, RunsReport } from './runs-report';

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
  rows: (j: number) => Parameters<typeof rowsPast>[0];
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
      const past = rowsPast(
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
        firstRow: past === null ? null : from + past.first,
        pastTo: past === null ? null : from + past.to,
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

/**
 * Where two generations' texts part (the rows compared are the ones they share): each run's choice at the last
 * shared row, its own margin, and the exact forward's gap between the two choices against the logits' floor — the
 * reference path's largest logit error (never below one rounding of the runs' storage of the exact row). Within
 * k × that floor, the texts part on a near tie rounding may flip; past it, the run that chose against the exact
 * forward made the choice.
 */
export function partingOfRuns(
  parted: PartedPair,
  prefill: number,
  logits: { A: ArrayLike<number> | null; B: ArrayLike<number> | null },
  exactRow: ArrayLike<number> | null,
  logitsFloor: FullMetrics | null,
  precision: Precision,
  k: number,
): RunsParting {
  const { row } = parted;
  const chose = { A: parted.chose.a, B: parted.chose.b };
  const margin = (own: ArrayLike<number> | null, mine: number | null, other: number | null) =>
    own && mine !== null && other !== null ? own[mine] - own[other] : null;
  let top = 0;
  if (exactRow) for (let i = 0; i < exactRow.length; i++) top = Math.max(top, Math.abs(exactRow[i]));
  const floor = Math.max(
    logitsFloor && Number.isFinite(logitsFloor.maxAbs) ? logitsFloor.maxAbs : 0,
    storageUnitRoundoff(precision) * top,
  );
  const exact =
    exactRow && chose.A !== null && chose.B !== null
      ? { A: exactRow[chose.A], B: exactRow[chose.B], gap: exactRow[chose.A] - exactRow[chose.B] }
      : null;
  const nearTie = exact ? Math.abs(exact.gap) <= k * floor : null;
  const step = row - prefill + 1;
  const at = rowWords(row, prefill);
  const ids = `run A chose ${chose.A ?? '?'}, run B ${chose.B ?? '?'}`;
  const times = (x: number) => (x < 100 ? x.toPrecision(2) : x.toExponential(1).replace('e+', 'e'));
  const gapWords = !exact
    ? 'the exact gap is unknown (a run does not name its choice)'
    : `the exact logits put them ${Math.abs(exact.gap).toPrecision(3)} apart, ${times(Math.abs(exact.gap) / Math.max(floor, Number.MIN_VALUE))}× the logits' floor: ${
        nearTie
          ? 'a near tie that rounding may flip'
          : `not a near tie — run ${exact.gap > 0 ? 'B' : 'A'} chose against the exact forward`
      }`;
  return {
    rows: parted.rows,
    held: { A: parted.rows, B: parted.rows },
    row,
    step: Math.max(0, step),
    chose,
    margin: { A: margin(logits.A, chose.A, chose.B), B: margin(logits.B, chose.B, chose.A) },
    exact,
    floor,
    nearTie,
    words: `The texts part at ${at}: ${ids}; ${gapWords}. Compared on the ${parted.rows} rows they share (positions 0–${parted.rows - 1}).`,
  };
}

/** A parted pair's parting in a report, from the runs' recorded logits and the exact forward's (rows from..T−1). */
export function partingOfReport(
  parted: PartedPair,
  a: RunFile,
  b: RunFile,
  exact: { data: Float64Array; from: number } | null,
  report: RunsReport,
  files: ScoredRun[],
): RunsParting {
  const V = report.model.config.vocabSize;
  const row = (data: ArrayLike<number> & { subarray(a: number, b: number): ArrayLike<number> }, r: number) =>
    data.length >= (r + 1) * V ? data.subarray(r * V, (r + 1) * V) : null;
  const logitsOf = (f: RunFile) => {
    const t = f.slots.get('logits');
    return t ? row(t.data, parted.row) : null;
  };
  const lowest = files.reduce<Precision>((p, r) => (r.precision === 'fp32' ? p : r.precision), 'fp32');
  return partingOfRuns(
    parted,
    a.generation!.prefill,
    { A: logitsOf(a), B: logitsOf(b) },
    exact ? row(exact.data, parted.row - exact.from) : null,
    report.curves.find((c) => c.slot === 'logits')?.floor ?? null,
    lowest,
    report.k,
  );
}

/** A parted pair analysed on its shared rows: its parting says how many rows each run held. */
export function heldRows(report: RunsReport, held: { A: number; B: number }): void {
  const p = report.parting;
  if (!p) return;
  p.held = held;
  p.words = p.words.replace(/\.$/, `, of the ${held.A} and ${held.B} rows runs A and B hold.`);
  report.sentence = report.sentence.replace(/ The texts part at .*$/, ` ${p.words}`);
}
