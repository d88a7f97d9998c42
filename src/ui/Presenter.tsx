// Presenter mode: a classroom scenario's steps one at a time, in large type for a projector, each with what
// it talks about (the layer chart, a layer's ops, the bisection, the determinism badge, the heatmap, the
// timing) from the scenario's report, filling the screen; ArrowRight / PageDown and ArrowLeft / PageUp move
// between steps (what presentation clickers send), Escape leaves.
import { type RefObject, useEffect, useId, useLayoutEffect, useRef, useState } from 'react';
import { useStore } from 'zustand';
import type { Report } from '../compare/analyze';
import type { Controller } from '../state/controller';
import { checkExpectation, type StepView, scenarioRun, stepView } from '../state/scenario';
import { phaseLabel } from '../state/spec';
import type { AppStore } from '../state/store';
import { pathCauseView } from './cause-words';
import { Drilldown } from './charts/Drilldown';
import { ErrorCurve } from './charts/ErrorCurve';
import { Heatmap } from './charts/Heatmap';
import { TimingPanel } from './charts/Timing';
import { exportName } from './export';
import { GenerationLine, TextsAndParting } from './GenerationParts';
import { RunLinkedButton } from './LinkPanels';
import { BADGE, Bisection, Determinism } from './ReportParts';
import { isRunOf, reportWords } from './Scenarios';
import { firstLayerWords } from './spec-words';

function isTyping(t: EventTarget | null): boolean {
  if (!(t instanceof HTMLElement)) return false;
  return t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName);
}

/**
 * The room's screen height for a chart: what is left under the step's words, the buttons and the verdict,
 * measured from where the figure starts (so the step's key element is on screen without scrolling).
 */
function useRoomBelow(ref: RefObject<HTMLElement | null>, key: string): number {
  const [h, setH] = useState(() =>
    typeof window === 'undefined' ? 500 : Math.round(window.innerHeight * 0.45),
  );
  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` names what moves the figure (the step, the type size)
  useLayoutEffect(() => {
    const measure = () => {
      const el = ref.current;
      if (!el) return;
      const scroller = el.closest('.presenter');
      const top = el.getBoundingClientRect().top + (scroller?.scrollTop ?? 0);
      // Below the figure: its title row (~2.2 em at 24 px) and the presenter's bottom padding.
      setH(Math.max(300, Math.floor(window.innerHeight - top - 96)));
    };
    measure();
    window.addEventListener('resize', measure);
    return () => window.removeEventListener('resize', measure);
  }, [ref, key]);
  return h;
}

/** What a step talks about, from the scenario's report, sized for the room. */
function StepFigure({
  store,
  report,
  view,
  height,
}: {
  store: AppStore;
  report: Report;
  view: StepView;
  height: number;
}) {
  const viewMetric = useStore(store, (s) => s.viewMetric);
  const selectedLayer = useStore(store, (s) => s.selectedLayer);
  const selectedTap = useStore(store, (s) => s.selectedTap);
  const selectLayer = useStore(store, (s) => s.selectLayer);
  const selectTap = useStore(store, (s) => s.selectTap);
  const segments = useStore(store, (s) => s.run.segments);
  const fileBase = (what: string, ext: string) => exportName(report, what, ext);
  const curve = (
    <ErrorCurve
      report={report}
      metric={viewMetric}
      selectedLayer={selectedLayer}
      onSelect={selectLayer}
      fileBase={fileBase}
      height={height}
    />
  );
  switch (view.kind) {
    case 'ops':
      return view.layer < report.layers.length ? (
        <Drilldown
          report={report}
          layer={view.layer}
          metric={viewMetric}
          selectedTap={selectedTap}
          onSelectTap={selectTap}
          onClose={() => selectLayer(null)}
          fileBase={fileBase}
          scale={24 / 12}
          row={Math.max(
            30,
            Math.floor((height - 60) / Math.max(1, report.taps.filter((t) => t.layer === view.layer).length)),
          )}
        />
      ) : (
        curve
      );
    case 'bisection':
      return (
        <div className="presenter-words">
          <Bisection report={report} />
        </div>
      );
    case 'determinism':
      return (
        <div className="presenter-words">
          <Determinism report={report} />
        </div>
      );
    case 'heatmap':
      return (
        <Heatmap
          report={report}
          selectedLayer={selectedLayer}
          onSelect={selectLayer}
          fileBase={fileBase}
          tokenText={() => null}
          rowsHeight={height - 60}
        />
      );
    case 'timing':
      return <TimingPanel report={report} fileBase={fileBase} />;
    case 'curve':
      return curve;
    case 'text':
      // Both texts, where they part and why (the parting's words beside them).
      return (
        <div className="presenter-words" data-testid="presenter-text">
          <TextsAndParting report={report} segments={segments} />
        </div>
      );
    case 'decode': {
      // The decode finding: the op where the decode's error is born on each path, and the story.
      const g = report.generation;
      return (
        <div className="presenter-words" data-testid="presenter-decode">
          <GenerationLine report={report} checking={false} />
          {!g?.decode && <p className="muted">No decode check ran for this run.</p>}
        </div>
      );
    }
  }
}

/** The presenter's verdict in words: the prompt's first divergent layer, or that its generated text diverges. */
function verdictWords(report: Report): string {
  if (report.verdict === 'generation-diverged')
    return 'the prompt agrees at every layer; the generated text diverges';
  const near = report.generation?.verdict === 'near-tie' ? ' (the texts part on a near tie: benign)' : '';
  return `${firstLayerWords(report.firstDivergentLayer)}${near}`;
}

/**
 * The cause line, short enough for the room: the cause found where the prompt's error is born (its headline; the
 * page's report has the detail), or the decode's finding; on a step about a layer's ops, only the op.
 */
function causeLine(report: Report, view: StepView['kind']): string | null {
  const why = report.why;
  const v = pathCauseView(why, false);
  const at = why?.born ? ` at ${why.born}` : why ? ` in layer ${why.layer}` : '';
  // A layer's ops fill the screen to its last row: there the line stays one line, the op where the error is born.
  if (view === 'ops' && why) return why.born ? `Born at ${why.born}.` : null;
  if (v.state === 'named') return `Cause${at}: ${v.headline}.`;
  if (v.state === 'unexplained') return `Cause${at}: no known cause explains it.`;
  if (v.state === 'race' || v.state === 'nonfinite' || v.state === 'combined')
    return `Found${at}: ${v.headline}.`;
  const g = report.generation;
  return g?.verdict === 'diverged' && g.words ? `Found: ${g.words}.` : null;
}

export function Presenter({ store, controller }: { store: AppStore; controller: Controller }) {
  const on = useStore(store, (s) => s.presenter);
  const view = useStore(store, (s) => s.scenario);
  const step = useStore(store, (s) => s.scenario?.step ?? 0);
  const stepScenario = useStore(store, (s) => s.stepScenario);
  const setPresenter = useStore(store, (s) => s.setPresenter);
  const run = useStore(store, (s) => s.run);
  const selectLayer = useStore(store, (s) => s.selectLayer);
  const ref = useRef<HTMLDivElement | null>(null);
  const figureRef = useRef<HTMLDivElement | null>(null);
  const largeType = useStore(store, (s) => s.prefs.largeType);
  const ids = useId();
  const sr = view ? scenarioRun(view.id, view.variant) : null;
  const active = on && sr !== null;

  useEffect(() => {
    if (!active) return;
    ref.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      // A chart that used the key (arrows among its points) keeps it.
      if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || isTyping(e.target)) return;
      if (e.key === 'ArrowRight' || e.key === 'PageDown') stepScenario(1);
      else if (e.key === 'ArrowLeft' || e.key === 'PageUp') stepScenario(-1);
      else if (e.key === 'Escape') setPresenter(false);
      else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => {
      window.removeEventListener('keydown', onKey);
      document.querySelector<HTMLElement>('[data-testid="present"]')?.focus();
    };
  }, [active, stepScenario, setPresenter]);

  // A step about a layer's ops opens that layer (and the page shows it after presenter mode too).
  const stepText = sr?.scenario.steps[step] ?? '';
  useEffect(() => {
    if (!active) return;
    const v = stepView(stepText);
    if (v.kind === 'ops') selectLayer(v.layer);
  }, [active, stepText, selectLayer]);

  const figureHeight = useRoomBelow(figureRef, `${step}|${largeType}|${on}|${run.report !== null}`);
  if (!active || !sr) return null;
  const steps = sr.scenario.steps;
  const report = isRunOf(run.report, sr) ? run.report : null;
  const check = report ? checkExpectation(sr.expect, report) : null;
  return (
    <div
      className="presenter"
      role="dialog"
      aria-modal="true"
      aria-labelledby={`${ids}-title`}
      data-testid="presenter"
      tabIndex={-1}
      ref={ref}
    >
      {/* A div, not a header: inside the dialog a header would be a second banner landmark (axe). */}
      <div className="presenter-head">
        <div>
          <p className="kicker">
            {reportWords(sr.scenario)}
            {sr.variant !== null ? ` · ${sr.label}` : ''}
          </p>
          <h2 id={`${ids}-title`}>{sr.scenario.title}</h2>
        </div>
        <button type="button" data-testid="presenter-exit" onClick={() => setPresenter(false)}>
          Leave (Esc)
        </button>
      </div>
      <p className="presenter-count" data-testid="presenter-count">
        Step {step + 1} of {steps.length}
      </p>
      <p className="presenter-step" data-testid="presenter-step" data-step={step} aria-live="polite">
        {steps[step]}
      </p>
      <nav className="presenter-nav" aria-label="Steps">
        <button
          type="button"
          data-testid="presenter-prev"
          disabled={step === 0}
          onClick={() => stepScenario(-1)}
        >
          ← Previous
        </button>
        <button
          type="button"
          data-testid="presenter-next"
          disabled={step >= steps.length - 1}
          onClick={() => stepScenario(1)}
        >
          Next →
        </button>
        <RunLinkedButton store={store} controller={controller} />
        <span className="presenter-status" role="status">
          {run.status === 'running' && run.progress ? phaseLabel(run.progress) : ''}
        </span>
      </nav>
      {report && check && (
        <div
          className="presenter-result"
          data-testid="presenter-result"
          data-view={stepView(steps[step]).kind}
        >
          <p
            className={`verdict ${report.verdict === 'agree' ? 'agree' : 'diverged'}`}
            data-testid="presenter-verdict"
            data-verdict={report.verdict}
            data-layer={report.firstDivergentLayer ?? ''}
          >
            <span className="verdict-badge">{BADGE[report.verdict]}</span> {verdictWords(report)} —{' '}
            {check.ok ? 'as the scenario expects.' : 'not what the scenario expects.'}{' '}
            {causeLine(report, stepView(steps[step]).kind) && (
              <span data-testid="presenter-cause">{causeLine(report, stepView(steps[step]).kind)}</span>
            )}
          </p>
          <div ref={figureRef}>
            <StepFigure store={store} report={report} view={stepView(steps[step])} height={figureHeight} />
          </div>
        </div>
      )}
      <p className="presenter-hint">← → or Page Up / Page Down: previous / next step · Esc: leave</p>
    </div>
  );
}
