// Classroom scenarios: a picker (each opens its short link '#s=<id>'), the open scenario's story, its steps
// (the current one marked; it follows the layer opened, the run and the variant, and a step clicked shows
// what it talks about), its expectation and variants, and the way into presenter mode (Presenter.tsx).
import { useEffect, useId } from 'react';
import { useStore } from 'zustand';
import type { Report } from '../compare/analyze';
import { scenarioLink } from '../run/permalink';
import { SCENARIOS, scenariosWords } from '../run/scenarios';
import type { Controller } from '../state/controller';
import {
  checkExpectation,
  type ScenarioRun,
  type StepView,
  scenarioRun,
  stepAfterRun,
  stepForLayer,
  stepForVariant,
  stepView,
} from '../state/scenario';
import { sameRun } from '../state/spec';
import type { AppStore } from '../state/store';
import { foundCauseSentence } from './cause-words';
import { RunLinkedButton } from './LinkPanels';
import { linkBase, openFragment } from './nav';
import { describeSpec, firstLayerWords } from './spec-words';

/**
 * Which scenario and which field report it retells: two scenarios retell report 000, so the
 * scenario's own number tells them apart.
 */
export function reportWords(sc: (typeof SCENARIOS)[number]): string {
  const n = SCENARIOS.indexOf(sc) + 1;
  const shared = SCENARIOS.filter((x) => x.report === sc.report).length > 1;
  const part = shared ? `, part ${SCENARIOS.filter((x) => x.report === sc.report).indexOf(sc) + 1}` : '';
  return `scenario ${n} · field report ${String(sc.report).padStart(3, '0')}${part}`;
}

export function ScenarioPicker({ store, controller }: { store: AppStore; controller: Controller }) {
  const current = useStore(store, (s) => s.scenario?.id ?? null);
  const running = useStore(store, (s) => s.run.status === 'running');
  const family = useStore(store, (s) => s.model?.family);
  const flavour = useStore(store, (s) => s.model?.flavour);
  const ids = useId();
  return (
    <section className="card" data-testid="scenario-picker" aria-labelledby={`${ids}-title`}>
      <h2 id={`${ids}-title`}>Classroom scenarios</h2>
      <p className="muted small">{scenariosWords()}, with steps to follow. Each has a short link.</p>
      {family === 'llama' && (
        <p className="note small" role="note" data-testid="scenario-family-note">
          These stories are runs of the embedded GPT-NeoX model: opening one loads it in place of the
          Llama-family model ({flavour ?? 'llama'}) loaded now. Load that model again from the model panel to
          go on with it.
        </p>
      )}
      <ul className="scenario-list">
        {SCENARIOS.map((sc) => (
          <li key={sc.id}>
            <button
              type="button"
              className="scenario-btn"
              data-testid="scenario-open"
              data-id={sc.id}
              aria-current={current === sc.id ? 'true' : undefined}
              disabled={running}
              onClick={() => openFragment(scenarioLink(sc.id), controller)}
            >
              <span className="scenario-title">{sc.title}</span>
              <span className="muted small">
                {reportWords(sc)} · <code>#s={sc.id}</code>
              </span>
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

/**
 * Whether a report is a run of the scenario's spec. The number of generated tokens may differ (no expectation
 * depends on it, and a slow GPU may well generate fewer).
 */
export function isRunOf(report: Report | null, sr: ScenarioRun): report is Report {
  return !!report && sameRun({ ...report.spec, generate: 0 }, { ...sr.spec, generate: 0 });
}

/** The expectation and, once the scenario's run is done, whether the report bears it out. */
function ExpectationLine({ store, sr }: { store: AppStore; sr: ScenarioRun }) {
  const report = useStore(store, (s) =>
    s.run.status === 'done' && isRunOf(s.run.report, sr) ? s.run.report : null,
  );
  const e = sr.expect;
  const check = report ? checkExpectation(e, report) : null;
  return (
    <div className="expect" data-testid="scenario-expect">
      <p>
        <strong>Expected:</strong> {firstLayerWords(e.firstDivergentLayer)}
        {e.verdict === 'generation-diverged' ? ', yet the generated text diverges' : ''}
        {e.kernel ? `; bisection blames ${e.kernel}` : ''}
        {e.deterministic === false ? '; the determinism check finds bits that change' : ''}
        {e.decode
          ? `; the ${e.decode.path} path's decode check finds it at decode step ${e.decode.step}, layer ${e.decode.layer}`
          : ''}
        . {e.note}
      </p>
      {report && check && (
        <p
          className={`verdict ${check.ok ? 'agree' : 'diverged'}`}
          data-testid="scenario-check"
          data-match={check.ok ? 'yes' : 'no'}
          data-layer={report.firstDivergentLayer ?? ''}
        >
          <span className="verdict-badge">{check.ok ? 'as expected' : 'not as expected'}</span> This run:{' '}
          {firstLayerWords(report.firstDivergentLayer)}
          {report.verdict === 'generation-diverged' ? ', yet the generated text diverges' : ''}
          {check.verdict === false && report.verdict !== 'generation-diverged'
            ? `; the verdict is ${report.verdict}, not ${e.verdict}`
            : ''}
          {check.kernel === false ? `; bisection does not blame ${e.kernel}` : ''}
          {check.deterministic === false
            ? `; the fused path was ${report.determinism.identical ? 'deterministic this time' : 'nondeterministic'}`
            : ''}
          {check.decode === false
            ? `; the decode check does not find it at step ${e.decode?.step}, layer ${e.decode?.layer}`
            : ''}
          {check.decode === true
            ? `; the ${e.decode?.path} path's decode check finds it at decode step ${e.decode?.step}, layer ${e.decode?.layer}`
            : ''}
          .
        </p>
      )}
      {report && <FoundCause report={report} />}
    </div>
  );
}

/** The cause the explorer found for this run (read from its report), once the run is done. */
function FoundCause({ report }: { report: Report }) {
  const words = foundCauseSentence(report.why);
  if (!words) return null;
  return (
    <p
      className="scenario-cause"
      data-testid="scenario-cause"
      data-cause={report.why?.cause?.named[0]?.id ?? ''}
    >
      {words}
    </p>
  );
}

/** The element of the page that shows a step's view (outside presenter mode). */
const VIEW_TARGET: Record<StepView['kind'], string> = {
  ops: '[data-testid="drilldown"]',
  bisection: '[data-testid="bisection"]',
  determinism: '[data-testid="determinism"]',
  heatmap: '[data-testid="heatmap"]',
  timing: '[data-testid="timing"]',
  curve: '[data-testid="error-curve"]',
  text: '[data-testid="generation"]',
  decode: '[data-testid="generation-verdict"]',
};

/** Shows a step's view in the page: opens the layer it names, then brings the view into view. */
function showStepView(store: AppStore, text: string): void {
  const v = stepView(text);
  if (v.kind === 'ops') store.getState().selectLayer(v.layer);
  // After React has drawn the layer's ops.
  requestAnimationFrame(() =>
    document.querySelector(VIEW_TARGET[v.kind])?.scrollIntoView({ block: 'start', behavior: 'smooth' }),
  );
}

function Steps({ store, steps }: { store: AppStore; steps: readonly string[] }) {
  const step = useStore(store, (s) => s.scenario?.step ?? 0);
  const setStep = useStore(store, (s) => s.setScenarioStep);
  const hasReport = useStore(store, (s) => s.run.report !== null);
  return (
    <ol className="steps" data-testid="scenario-steps">
      {steps.map((t, i) => (
        <li
          // biome-ignore lint/suspicious/noArrayIndexKey: a step's position is its identity
          key={i}
          className={i === step ? 'current' : undefined}
          aria-current={i === step ? 'step' : undefined}
          data-testid="scenario-step"
          data-view={stepView(t).kind}
        >
          <button
            type="button"
            className="step-btn"
            onClick={() => {
              setStep(i);
              if (hasReport) showStepView(store, t);
            }}
          >
            {t}
          </button>
        </li>
      ))}
    </ol>
  );
}

/**
 * The highlighted step follows what the viewer does: a layer opened moves it to the step about that
 * layer, a finished run past its "Run …" step, a variant opened to the step about the variant.
 */
function useStepFollows(store: AppStore): void {
  useEffect(
    () =>
      store.subscribe((st, prev) => {
        const view = st.scenario;
        if (!view) return;
        const sr = scenarioRun(view.id, view.variant);
        if (!sr) return;
        const steps = sr.scenario.steps;
        let next: number | null = null;
        if (st.selectedLayer !== null && st.selectedLayer !== prev.selectedLayer)
          next = stepForLayer(steps, st.selectedLayer);
        else if (st.run.status === 'done' && prev.run.status === 'running')
          next = stepAfterRun(steps, view.step);
        else if (
          view.variant !== null &&
          prev.scenario?.variant !== view.variant &&
          prev.scenario?.id === view.id
        )
          next = stepForVariant(steps);
        if (next !== null && next !== view.step) st.setScenarioStep(next);
      }),
    [store],
  );
}

export function ScenarioStage({ store, controller }: { store: AppStore; controller: Controller }) {
  useStepFollows(store);
  const view = useStore(store, (s) => (s.linked?.origin === 'scenario' ? s.scenario : null));
  const setPresenter = useStore(store, (s) => s.setPresenter);
  const running = useStore(store, (s) => s.run.status === 'running');
  const ids = useId();
  if (!view) return null;
  const sr = scenarioRun(view.id, view.variant);
  if (!sr) return null;
  const sc = sr.scenario;
  const shortLink = new URL(scenarioLink(sc.id, view.variant ?? undefined), linkBase()).href;
  const runs: { n: number | null; label: string }[] = [
    { n: null, label: 'The scenario' },
    ...(sc.variants ?? []).map((v, i) => ({ n: i + 1, label: v.label })),
  ];
  return (
    <section
      className="card scenario-stage"
      data-testid="scenario"
      data-id={sc.id}
      data-variant={view.variant ?? ''}
      aria-labelledby={`${ids}-title`}
    >
      <div className="card-head">
        <div>
          <p className="kicker">Classroom {reportWords(sc)}</p>
          <h2 id={`${ids}-title`}>{sc.title}</h2>
        </div>
        <button type="button" data-testid="present" onClick={() => setPresenter(true)}>
          Present
        </button>
      </div>
      <p className="story" data-testid="scenario-story">
        {sc.story}
      </p>
      {/* Run sits right under the story: on screen at 1280×800 when the scenario opens. */}
      <div className="actions">
        <RunLinkedButton store={store} controller={controller} />
        <span className="muted small">
          Short link:{' '}
          <span className="mono" data-testid="scenario-link">
            {shortLink}
          </span>
        </span>
      </div>
      {runs.length > 1 && (
        <fieldset className="variants bare" disabled={running}>
          <legend className="muted small">Runs of this scenario:</legend>
          {runs.map((r) => (
            <button
              key={r.n ?? 0}
              type="button"
              className="small-btn"
              data-testid="scenario-variant"
              data-variant={r.n ?? ''}
              aria-pressed={r.n === view.variant}
              onClick={() => openFragment(scenarioLink(sc.id, r.n ?? undefined), controller)}
            >
              {r.label}
            </button>
          ))}
        </fieldset>
      )}
      {view.variant !== null && (
        <p className="muted small" data-testid="scenario-variant-label">
          Variant {view.variant}: {sr.label}
        </p>
      )}
      <Steps store={store} steps={sc.steps} />
      <dl className="facts spec-facts small">
        {describeSpec(sr.spec)
          .filter((l) => l.label !== 'Model')
          .map((l) => (
            <div key={l.label} className="fact">
              <dt>{l.label}</dt>
              <dd data-testid={l.testId}>{l.value}</dd>
            </div>
          ))}
      </dl>
      <ExpectationLine store={store} sr={sr} />
    </section>
  );
}
