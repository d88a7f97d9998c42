// The run in flight or shown: its status, spec, progress and report, and how a report grows while the run
// goes on (the analysis first, then bisection, determinism and each generated token). Pure.
import type { RunSpec } from '../run/runspec';
import type { ComparePartial, CompareProgress, Report } from '../worker/api';

export type RunStatus = 'idle' | 'running' | 'done' | 'cancelled' | 'error';

/** The generated text of one path cut around the first differing token (null when they never differ). */
export interface TextSegments {
  before: string;
  at: string;
  after: string;
}

export interface RunState {
  status: RunStatus;
  /** The RunSpec of the run in flight or of the report shown. */
  spec: RunSpec | null;
  progress: CompareProgress | null;
  startedAt: number | null;
  elapsedMs: number | null;
  report: Report | null;
  /** Reference and fused continuations cut at the first differing token (decoded by the worker). */
  segments: { reference: TextSegments; fused: TextSegments } | null;
  /**
   * While a run is in flight: the parts of `report` (which then holds the analysis so far) not known yet.
   * Empty once the run is done.
   */
  pending: PendingPart[];
  /** Tokens generated so far on each path, while the run generates (streamed from the worker). */
  stream: TokenStream | null;
}

export type PendingPart = 'bisection' | 'determinism' | 'generation';

export interface StreamedPath {
  ids: number[];
  text: string | null;
}

export interface TokenStream {
  reference: StreamedPath;
  fused: StreamedPath;
  /** Tokens asked for on each path. */
  total: number;
}

export const emptyRun: RunState = {
  status: 'idle',
  spec: null,
  progress: null,
  startedAt: null,
  elapsedMs: null,
  report: null,
  segments: null,
  pending: [],
  stream: null,
};

/** A run in flight with one more piece of its report. */
export function withPartial(run: RunState, p: ComparePartial): RunState {
  const drop = (part: PendingPart) => run.pending.filter((x) => x !== part);
  switch (p.kind) {
    case 'analysis': {
      const pending: PendingPart[] = [];
      if (p.report.spec.generate > 0) pending.push('generation');
      if (p.report.verdict === 'diverged' && p.report.bisection === null) pending.push('bisection');
      if (p.report.determinism.runs.length === 0) pending.push('determinism');
      return { ...run, report: p.report, pending };
    }
    case 'bisection':
      return run.report
        ? { ...run, report: { ...run.report, bisection: p.bisection }, pending: drop('bisection') }
        : run;
    case 'determinism':
      return run.report
        ? { ...run, report: { ...run.report, determinism: p.determinism }, pending: drop('determinism') }
        : run;
    case 'why':
      return run.report ? { ...run, report: { ...run.report, why: p.why } } : run;
    case 'token': {
      const empty: StreamedPath = { ids: [], text: null };
      const stream: TokenStream = run.stream ?? { reference: empty, fused: empty, total: p.total };
      return { ...run, stream: { ...stream, total: p.total, [p.path]: { ids: [...p.ids], text: p.text } } };
    }
  }
}
