// The "why" of a Llama-family runs analysis (family-runs.ts): at each run's first born op, the family's causes
// (family-causes.ts candidatesFor: each a variant of one step of the check's group, with its parameters) are scored
// as the two-path why scores them (family-why.ts): the group re-run by the registry's fp64 forms from the run's own
// recorded inputs under each variant — first on the rows where the error lives, the finalists on every row
// (family-causes-rows.ts) — its residual against the recorded output over the op's floor; a cause is named as
// docs/CAUSES.md names one (verdictOf). The anatomy of the error is causes/anatomy.ts's. The finding and its check
// carry both; the finding's sentence ends with "probable cause: <words>".
import type { NeoXConfig } from '../numeric/types';
import { anatomyOpOf } from '../ops/families';
import { anatomy } from './causes/anatomy';
import type { OpData } from './causes/types';
import { candidatesFor, verdictOf } from './family-causes';
import { pickRows, pickRowsF32, scoreOnRows } from './family-causes-rows';
import { computeCheck, type FamilyRun, type GroupContext } from './family-runs-ops';
import { nonFiniteIn, ratioOf } from './floor';
import { fullMetrics } from './metrics';
import type { RunsReport } from './runs-report';
import { causeClause } from './why-runs';

/** Adds the anatomy and the cause to each run's first born op (in place), and to the sentences. */
export async function explainFamilyFindings(
  report: RunsReport,
  runs: FamilyRun[],
  ctx: GroupContext,
  shared: NeoXConfig,
  exactOf: (run: number, check: number) => { exact: Float64Array; kept: Map<string, Float64Array> },
  /** Awaited between candidates: lets a cancel through (it throws then). */
  yieldNow: () => Promise<void> = async () => undefined,
): Promise<void> {
  const t0 = performance.now();
  for (const f of report.findings) {
    if (!f.check) continue;
    const j = runs.findIndex((r) => r.id === f.run);
    const run = runs[j];
    const i = run.checks.findIndex((c) => c.id === f.check);
    const c = run.checks[i];
    const result = report.checks.find((x) => x.run === f.run && x.id === f.check)!;
    if (result.nonFinite > 0) {
      f.cause = null;
      f.anatomy = null;
      result.cause = null;
      result.anatomy = null;
      continue;
    }
    const recorded = run.slot(c.output)!;
    const { exact, kept } = exactOf(j, i);
    const scale = recorded.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    const P = run.precision;
    const started = performance.now();
    const T = ctx.tokens.length;
    // Each candidate on the rows where the error lives first, the finalists on every row (family-causes-rows.ts).
    const { tested, sampled } = await scoreOnRows(
      candidatesFor(c, ctx.cfg, c.layer ?? 0, {
        decodeFrom: run.input.file.generation?.prefill,
        rows: T,
      }),
      {
        T,
        steps: c.steps,
        recorded,
        exact,
        compute: (cand, rows) => {
          if (!rows) return computeCheck(c, ctx, run.slot, cand, kept);
          const sub = new Map([...kept].map(([k, v]) => [k, pickRows(v, T, rows)]));
          const slot = (s: string) => {
            const v = run.slot(s);
            return v && pickRowsF32(v, T, rows);
          };
          return computeCheck(c, { ...ctx, tokens: rows.map((t) => ctx.tokens[t]) }, slot, cand, sub);
        },
        residual: (out) => {
          const m = fullMetrics(recorded, out, P);
          return nonFiniteIn(m) > 0
            ? Number.POSITIVE_INFINITY
            : ratioOf(m, result.floor, report.metric, P, scale);
        },
        ratio: result.ratio,
        k: report.k,
        yieldNow,
      },
    );
    const cause = {
      ...verdictOf(tested, result.ratio, report.k, performance.now() - started),
      sampled,
    };
    const data: OpData = {
      op: anatomyOpOf(c.steps, c.op),
      layer: c.layer,
      cfg: shared,
      tokens: [...ctx.tokens],
      inputs: [],
      inputSlots: [],
      recorded,
      exact,
      weights: {},
      angles: ctx.angles,
      others: [],
      floor: result.floor,
      metric: report.metric,
      k: report.k,
      precision: P,
      scale,
      prefill: run.input.file.generation?.prefill,
    };
    const anat = anatomy(data);
    f.cause = cause;
    f.anatomy = anat;
    result.cause = cause;
    result.anatomy = anat;
    f.sentence = f.sentence.replace(/\.$/, `; ${causeClause(cause.words)}.`);
  }
  report.durations['why.causes'] = performance.now() - t0;
  report.sentence = report.findings.map((x) => x.sentence).join(' ');
}
