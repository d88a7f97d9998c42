// The runs analysis's last phase, "why": at each run's first born op, the anatomy of its error and the cause that
// explains it (why.ts), read from the run's own recorded tensors and the oracle's exact output of that op. The
// finding and the check carry both; the finding's sentence ends with "probable cause: <words>".
import type { Engine } from '../engine/engine';
import type { ProductsKit } from '../engine/oracle-products';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import type { RunFile } from '../model/run-file';
import type { Precision } from '../numeric/precision';
import { forgetProducts } from './causes/search-products';
import type { OpKind } from './causes/types';
import type { OpCheck } from './run-checks';
import type { RunsReport } from './runs-report';
import { neighbours, whyAt } from './why';

export interface WhyRun {
  id: string;
  file: RunFile;
  precision: Precision;
  checks: OpCheck[];
  /** The oracle's exact output of check i (of the run's checks), over every row. */
  exact: (i: number) => Promise<Float64Array>;
}

/** The words a sentence ends with for a finding's cause. */
export function causeClause(words: string): string {
  return `probable cause: ${words}`;
}

/** Adds the anatomy and the cause to each run's first born op (in place), and to the sentences. */
export async function explainRunFindings(
  engine: Engine,
  report: RunsReport,
  runs: WhyRun[],
  angles: RotaryAngles,
  products: ProductsKit | null = null,
): Promise<void> {
  for (const f of report.findings) {
    if (!f.check) continue;
    const run = runs.find((r) => r.id === f.run)!;
    const i = run.checks.findIndex((c) => c.id === f.check);
    const c = run.checks[i];
    const result = report.checks.find((x) => x.run === f.run && x.id === f.check)!;
    if (result.nonFinite > 0) {
      f.cause = null;
      f.anatomy = null;
      continue;
    }
    const slot = (s: string) => run.file.slots.get(s)!.data;
    const recorded = slot(c.output);
    const t0 = performance.now();
    const exact = await run.exact(i);
    const spent = (k: string, ms: number) => {
      report.durations[`why.${k}`] = (report.durations[`why.${k}`] ?? 0) + ms;
    };
    spent('exact', performance.now() - t0);
    const inputs = c.inputs.map(slot);
    const others = neighbours(
      [...run.file.slots].map(([s, t]) => [s, t] as [string, { name: string; data: Float32Array }]),
      c.layer,
      [...c.inputs, c.output],
    );
    const why = await whyAt({
      engine,
      op: c.op as OpKind,
      layer: c.layer,
      tokens: report.tokens,
      inputs,
      inputSlots: c.inputs,
      recorded,
      exact,
      others,
      floor: result.floor,
      metric: report.metric,
      k: report.k,
      precision: run.precision,
      scale: recorded.reduce((m, x) => Math.max(m, Math.abs(x)), 0),
      angles,
      products,
      prefill: run.file.generation?.prefill,
    });
    // The GPU's products held for this search go with it: a run's tensors outlive the analysis (the page may analyse
    // them again on another model of their shape).
    forgetProducts(...inputs, ...others.map((o) => o.data));
    for (const [k, ms] of Object.entries(why.ms)) spent(k, ms);
    f.cause = why.cause;
    f.anatomy = why.anatomy;
    result.cause = why.cause;
    result.anatomy = why.anatomy;
    f.sentence = f.sentence.replace(/\.$/, `; ${causeClause(why.cause.words)}.`);
  }
  report.sentence = report.findings.map((x) => x.sentence).join(' ');
}
