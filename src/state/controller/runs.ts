// Running a comparison of the current settings (progress into the store, the report kept in the history,
// the pool polled meanwhile), cancelling it, and cutting both generated texts at their first difference.
import type { Report } from '../../compare/analyze';
import type { IsolatedResult } from '../../kernels/custom/isolated';
import type { CustomKernelSpec } from '../../run/runspec';
import { asWorkerError } from '../../worker/client';
import { buildSpec } from '../spec';
import { canRun, type TextSegments } from '../store';
import type { Ctx } from './context';
import type { HistoryKeeper } from './history';
import type { PoolWatch } from './pool';

/**
 * How long a cancelled run may take to stop on its own (the worker checks between GPU passes, and one pass
 * can take seconds on a slow adapter) before the worker is stopped outright and started afresh.
 */
export const CANCEL_GRACE_MS = 300;

export interface Runner {
  run(): Promise<void>;
  cancel(): void;
  /** Cuts both continuations of a report at their first difference (for the highlight). */
  showSegments(report: Report, generation: number): Promise<void>;
}

function cut(text: string | null, before: string | null, at: string | null): TextSegments | null {
  if (text === null || before === null || at === null) return null;
  return { before, at, after: text.startsWith(before + at) ? text.slice(before.length + at.length) : '' };
}

/**
 * `hardStop` ends the run in flight at once: the worker is terminated (its GPU work with it) and a fresh
 * one loads the model again.
 */
export function createRunner(
  ctx: Ctx,
  pool: PoolWatch,
  history: HistoryKeeper,
  hardStop: () => void,
  /** The isolated test result of a custom kernel's source, if it ran (it goes into the report). */
  isolatedOf: (custom: CustomKernelSpec) => IsolatedResult | null,
): Runner {
  const { s, store } = ctx;

  async function segments(ids: number[], first: number, text: string | null): Promise<TextSegments | null> {
    if (text === null) return null;
    const [before, at] = await Promise.all([
      ctx.client().decode(ids.slice(0, first)),
      ctx.client().decode(ids.slice(first, first + 1)),
    ]);
    return cut(text, before, at);
  }

  async function showSegments(report: Report, g: number): Promise<void> {
    const gen = report.generation;
    if (!gen || gen.firstDifference === null) return;
    const fd = gen.firstDifference;
    const [reference, fused] = await Promise.all([
      segments(gen.reference.ids, fd, gen.reference.text),
      segments(gen.fused.ids, fd, gen.fused.text),
    ]);
    if (g === ctx.generation() && reference && fused && s().run.report === report)
      s().setSegments({ reference, fused });
  }

  return {
    showSegments,
    async run() {
      const st = s();
      if (!canRun(st) || !st.model || !st.modelSource) return;
      const built = buildSpec(st.settings, st.modelSource, st.model);
      if (!built.ok) {
        s().clearError();
        store.setState({ error: { kind: 'input', message: built.message } });
        return;
      }
      const g = ctx.generation();
      s().runStarted(built.spec, ctx.now());
      pool.start();
      try {
        const compare = (beat: () => void) =>
          ctx.client().compare(
            built.spec,
            (p) => {
              beat();
              if (g === ctx.generation()) s().runProgress(p);
            },
            (p) => {
              beat();
              if (g === ctx.generation()) s().runPartial(p);
            },
            { oracle: ctx.opts.oracle ?? 'auto' },
          );
        // Custom GPU code may never finish: such a run is watched (shipped kernels are not).
        const custom = built.spec.custom;
        const report = custom
          ? { ...(await ctx.watch('the run with your custom kernel', compare)), isolated: isolatedOf(custom) }
          : await compare(() => {});
        if (g !== ctx.generation()) return;
        s().runFinished(report, ctx.now());
        await Promise.all([history.keep(built.spec, report), showSegments(report, g)]);
      } catch (e) {
        if (g === ctx.generation()) s().runFailed(asWorkerError(e), ctx.now());
      } finally {
        if (g === ctx.generation()) {
          pool.stop();
          await pool.refresh();
        }
      }
    },
    cancel() {
      const st = s();
      if (st.run.status !== 'running') return;
      const startedAt = st.run.startedAt;
      void ctx.client().cancel();
      // Within half a second, whatever the GPU is doing: if the run has not stopped by then, stop the worker.
      setTimeout(() => {
        const now = s().run;
        if (now.status === 'running' && now.startedAt === startedAt) hardStop();
      }, CANCEL_GRACE_MS);
    },
  };
}
