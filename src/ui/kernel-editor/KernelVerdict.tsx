// What a run with a custom kernel says about that kernel, in plain words: how it fared alone (its isolated
// test) next to how the model fared with it — above all the case where it passed alone yet the model
// diverges — with the way into the per-op drill-down of the layer where it parts. For an exercise, "fixed"
// once both agree.
import { useStore } from 'zustand';
import type { Controller } from '../../state/controller';
import { exerciseOf, slotView } from '../../state/kernel-catalog';
import { isolatedFor } from '../../state/kernel-editor';
import type { AppStore } from '../../state/store';
import type { IsolatedResult, Report } from '../../worker/api';
import { aboveFloor, kernelOfTap } from '../charts/kernels';
import { errorValue } from '../charts/scales';
import './kernel-editor.css';

function alone(r: IsolatedResult | null): string {
  if (!r) return 'was not tested alone';
  const worst = Math.max(...r.rows.map((x) => x.worstRatio));
  const shapes = new Set(r.rows.map((x) => x.shape)).size;
  const w = Number.isFinite(worst) ? worst.toFixed(3) : '∞';
  return r.pass
    ? `passed its isolated test (${shapes} shapes, worst error ${w} × tolerance)`
    : `failed its isolated test (worst error ${w} × tolerance)`;
}

/** The first op of `layer` (in plan order) whose error is past k × its own noise floor, with its kernel. */
function firstOpPast(
  report: Report,
  layer: number,
): { op: string; ratio: number; kernel: string | null } | null {
  for (const t of report.taps) {
    if (t.layer !== layer || t.status !== 'compared' || !t.vsReference || !t.refVsOracle) continue;
    const ratio = aboveFloor(
      errorValue(t.vsReference, report.metric),
      errorValue(t.refVsOracle, report.metric),
    );
    if (Number.isNaN(ratio) || ratio > report.k)
      return { op: t.op, ratio, kernel: kernelOfTap(t.op, report.spec.fused)?.title ?? null };
  }
  return null;
}

export function KernelVerdict({ store, controller }: { store: AppStore; controller: Controller }) {
  const report = useStore(store, (s) => (s.run.status === 'done' ? s.run.report : null));
  const ed = useStore(controller.kernels.editor);
  const selectLayer = useStore(store, (s) => s.selectLayer);
  const custom = report?.spec.custom;
  if (!report || !custom) return null;
  const slot = slotView(custom.slot);
  // The report's own record (a stored run keeps it); the editor's for reports from before it had one.
  const iso = report.isolated !== undefined ? report.isolated : isolatedFor(ed, custom);
  // 'generation-diverged': the prompt agrees but the generated text does not — as much a divergence as any.
  const textOnly = report.verdict === 'generation-diverged';
  const diverged = report.verdict !== 'agree';
  const L = report.firstDivergentLayer;
  const born = report.firstBornLayer;
  const model = textOnly
    ? `the prompt agrees but the generated text diverges (${report.generation?.words ?? 'see the generated text'})`
    : diverged
      ? L !== null
        ? `the model diverges from layer ${L}${born !== null ? ` (the error is born in layer ${born})` : ''}`
        : 'the model’s logits diverge'
      : `the model agrees with the reference path within k = ${report.k} × the noise floor at every layer`;
  const passedYetDiverged = iso?.pass === true && diverged;
  const where = diverged && (born ?? L) !== null ? firstOpPast(report, (born ?? L) as number) : null;
  const exercise = ed.exercise ? exerciseOf(ed.exercise) : undefined;
  const fixed =
    !!exercise &&
    exercise.slot === custom.slot &&
    ed.source === custom.source &&
    iso?.pass === true &&
    !diverged;
  const state = passedYetDiverged
    ? 'passed-yet-diverged'
    : diverged
      ? 'diverged'
      : iso?.pass === false
        ? 'failed-alone'
        : 'agree';
  return (
    <section
      className={`card kernel-verdict ${diverged ? 'is-bad' : 'is-good'}`}
      data-testid="kernel-verdict"
      data-state={state}
      aria-live="polite"
    >
      <h2>Your {slot.id} kernel</h2>
      <p className="ke-verdict-line">
        {passedYetDiverged ? (
          <>
            <strong>It passed its isolated test, yet the model diverges.</strong> Your custom {slot.id} kernel{' '}
            {alone(iso)}, but {model}: the test’s shapes and random inputs did not exercise what the model
            does.
          </>
        ) : (
          <>
            Your custom {slot.id} kernel {alone(iso)}, and {model}
            {iso?.pass === false && !diverged
              ? ' — its error stays under the model’s own rounding noise.'
              : '.'}
          </>
        )}
      </p>
      {where && (
        <p data-testid="kernel-verdict-op">
          In layer {born ?? L} the first op past {report.k} × its own noise floor is{' '}
          <strong className="mono">{where.op}</strong>
          {where.kernel ? ` (computed by ${where.kernel})` : ''}:{' '}
          {Number.isFinite(where.ratio) ? `${where.ratio.toPrecision(3)} ×` : 'not finite'}.
        </p>
      )}
      {diverged && (L ?? born) !== null && (
        <button
          type="button"
          className="small-btn"
          data-testid="kernel-verdict-drill"
          onClick={() => {
            selectLayer((born ?? L) as number);
            // The drill-down mounts on the next frame; bring it into view.
            requestAnimationFrame(() =>
              document.querySelector('[data-testid="drilldown"]')?.scrollIntoView({ block: 'start' }),
            );
          }}
        >
          Show layer {born ?? L}’s ops in the drill-down
        </button>
      )}
      {exercise && exercise.slot === custom.slot && (
        <p
          className={fixed ? 'ok-line' : 'muted'}
          data-testid="exercise-status"
          data-fixed={fixed ? 'yes' : 'no'}
        >
          {fixed
            ? `Fixed: “${exercise.title}” passes its isolated test and the model agrees within the floor.`
            : `Exercise “${exercise.title}”: not fixed yet — ${exercise.goal}`}
        </p>
      )}
    </section>
  );
}
