// The report of the last run: verdict, bisection and determinism in words, the charts (error curve, heatmap,
// per-op drill-down and histogram, timing), both paths' generated text side by side, and the exports.
import { useCallback, useEffect, useId, useRef } from 'react';
import { useStore } from 'zustand';
import type { Report } from '../compare/analyze';
import { faultInfo } from '../run/faults';
import { METRICS, type Metric } from '../run/runspec';
import { buildSpec, changesSince, modelRef } from '../state/spec';
import type { AppStore } from '../state/store';
import { ExportDetails } from './charts/ChartCard';
import { Drilldown, OP_ROWS } from './charts/Drilldown';
import { ErrorCurve } from './charts/ErrorCurve';
import { Heatmap } from './charts/Heatmap';
import { Histogram } from './charts/Histogram';
import { TimingPanel } from './charts/Timing';
import { download, exportName, layersToCsv, reportToJson, runDetails } from './export';
import { formatMetric, formatMs, METRIC_LABELS } from './format';
import { Generation, GenerationLine, Streaming } from './GenerationParts';
import { Term } from './Glossary';
import { SharerComparison, StoredBanner, useSharerFor } from './LinkPanels';
import { Bisection, Determinism, OracleNote, Verdict } from './ReportParts';
import { WhyDrill, WhyLine } from './WhyParts';

function Exports({ report }: { report: Report }) {
  return (
    <fieldset className="exports bare" aria-label="Export the report">
      <button
        type="button"
        data-testid="export-json"
        onClick={() =>
          download(
            new Blob([reportToJson(report)], { type: 'application/json' }),
            exportName(report, 'report', 'json'),
          )
        }
      >
        Report (JSON)
      </button>
      <button
        type="button"
        data-testid="export-csv"
        onClick={() =>
          download(new Blob([layersToCsv(report)], { type: 'text/csv' }), exportName(report, 'layers', 'csv'))
        }
      >
        Layers (CSV)
      </button>
    </fieldset>
  );
}

/**
 * What changed since the report shown was run ('' when the settings still describe it): a report is never
 * shown under other settings without saying so.
 */
function useChangedSince(store: AppStore): string {
  return useStore(store, (s) => {
    const report = s.run.report;
    if (!report || s.run.status === 'running' || !s.model || !s.modelSource) return '';
    const built = buildSpec(s.settings, s.modelSource, s.model);
    const now = { ref: modelRef(s.modelSource, s.model), name: modelWords(s.model) };
    return changesSince(report.spec, modelWords(report.model), built, now).join(', ');
  });
}

/** A model's name and family ("model (Llama family, qwen3)"): a model picked from disk may be called just "model". */
function modelWords(m: { name: string; family?: string; flavour?: string | null }): string {
  return `${m.name} (${m.family === 'llama' ? `Llama family, ${m.flavour}` : 'GPT-NeoX'})`;
}

function StaleBanner({ changed }: { changed: string }) {
  return (
    <p className="note warn stale-note" role="note" data-testid="stale" data-changed={changed}>
      <strong>Previous run.</strong> This report answers the settings of the previous run; since then you
      changed {changed}. Press Run to see the answer to the settings shown.
    </p>
  );
}

export function Results({ store }: { store: AppStore }) {
  const run = useStore(store, (s) => s.run);
  const selectedLayer = useStore(store, (s) => s.selectedLayer);
  const selectedTap = useStore(store, (s) => s.selectedTap);
  const viewMetric = useStore(store, (s) => s.viewMetric);
  const model = useStore(store, (s) => s.model);
  const selectLayer = useStore(store, (s) => s.selectLayer);
  const selectTap = useStore(store, (s) => s.selectTap);
  const setViewMetric = useStore(store, (s) => s.setViewMetric);
  const ids = useId();
  const changed = useChangedSince(store);
  const report = run.report;
  // The first time a run of this page has a verdict, bring it into view (not for a stored run re-opened).
  const scrolledFor = useRef<number | null>(null);
  const hasVerdict = report !== null;
  useEffect(() => {
    if (!hasVerdict || run.startedAt === null || scrolledFor.current === run.startedAt) return;
    scrolledFor.current = run.startedAt;
    // In view and with the keyboard on it (Run, disabled while the run goes on, had it).
    const verdict = document.querySelector<HTMLElement>('.results [data-testid="verdict"]');
    if (!verdict || store.getState().presenter) return;
    verdict.setAttribute('tabindex', '-1');
    verdict.scrollIntoView({ block: 'center', behavior: 'instant' as ScrollBehavior });
    verdict.focus({ preventScroll: true });
  }, [hasVerdict, run.startedAt, store]);
  // A layer opened (by a point, a button, a heatmap row or a step): its ops come into view with the keyboard
  // on the first op row (not under presenter mode, which has the keyboard).
  const presenter = useStore(store, (s) => s.presenter);
  // The chart text's size (styles.css: 13 px, 17 px in Large type): the drill-down's margins follow it.
  const largeType = useStore(store, (s) => s.prefs.largeType);
  useEffect(() => {
    if (selectedLayer === null || presenter) return;
    requestAnimationFrame(() => {
      const drill = document.querySelector<HTMLElement>('.results [data-testid="drilldown"]');
      if (!drill) return;
      drill.scrollIntoView({ block: 'nearest', behavior: 'instant' as ScrollBehavior });
      const row = drill.querySelector<SVGElement>(`${OP_ROWS}[tabindex="0"]`);
      if (row) row.focus({ preventScroll: true });
      else {
        drill.setAttribute('tabindex', '-1');
        drill.focus({ preventScroll: true });
      }
    });
  }, [selectedLayer, presenter]);
  /** Escape or Close: the drill-down goes and the keyboard returns to the layer's point. */
  const closeDrill = useCallback(() => {
    const layer = store.getState().selectedLayer;
    selectLayer(null);
    document
      .querySelector<SVGElement>(`.results circle[data-testid="curve-point"][data-layer="${layer ?? -1}"]`)
      ?.focus();
  }, [store, selectLayer]);
  // Escape anywhere in the drill-down closes it.
  const drillRef = useRef<HTMLElement>(null);
  const open = selectedLayer !== null && report !== null;
  useEffect(() => {
    const el = drillRef.current;
    if (!open || !el) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || e.defaultPrevented) return;
      e.preventDefault();
      closeDrill();
    };
    el.addEventListener('keydown', onKey);
    return () => el.removeEventListener('keydown', onKey);
  }, [open, closeDrill]);
  const sharer = useSharerFor(store, report);
  const bytes = model?.tokenizer === 'bytes';
  const tokenText = useCallback(
    (i: number): string | null => {
      const id = report?.tokens[i];
      if (!bytes || id === undefined || id < 32 || id > 126) return null;
      return id === 32 ? '␣' : String.fromCharCode(id);
    },
    [report, bytes],
  );

  if (!report) {
    return (
      <section className="card results-empty" data-testid="results-empty">
        <h2>Results</h2>
        <p className="muted">
          {run.status === 'running'
            ? 'Running both paths… the layer chart, heatmap and verdict appear as soon as the analysis has them.'
            : 'Choose the fused kernels (and, to teach, a fault), then press Run. The report shows where the fused path parts from the reference, layer by layer and op by op, against the noise floor of honest fp32 rounding.'}
        </p>
      </section>
    );
  }
  const fileBase = (what: string, ext: string) => exportName(report, what, ext);
  const details = runDetails(report);
  const tap = selectedTap ? (report.taps.find((t) => t.name === selectedTap) ?? null) : null;
  const metricSelect = (
    <select
      aria-label="Metric shown in the charts"
      data-testid="view-metric"
      value={viewMetric}
      onChange={(e) => setViewMetric(e.target.value as Metric)}
    >
      {METRICS.map((m) => (
        <option key={m} value={m}>
          {METRIC_LABELS[m]}
          {m === report.metric ? ' (verdict)' : ''}
        </option>
      ))}
    </select>
  );

  return (
    <ExportDetails.Provider value={details}>
      <div
        className={`results${changed ? ' stale' : ''}`}
        data-testid="results"
        data-stale={changed ? 'yes' : 'no'}
      >
        <section className="card" aria-labelledby={`${ids}-summary`}>
          <div className="card-head">
            <h2 id={`${ids}-summary`}>{changed ? 'Report of the previous run' : 'Report'}</h2>
            {run.status === 'done' && <Exports report={report} />}
          </div>
          {changed && <StaleBanner changed={changed} />}
          <StoredBanner store={store} />
          <Verdict
            report={report}
            generating={
              !run.pending.includes('generation') ? null : run.status === 'running' ? 'running' : 'cancelled'
            }
          />
          <GenerationLine
            report={report}
            checking={run.progress?.phase === 'decode check' && run.status === 'running'}
          />
          <WhyLine
            report={report}
            running={run.status === 'running'}
            onOpen={report.why ? () => selectLayer(report.why!.layer) : undefined}
          />
          <OracleNote report={report} />
          {report.plantedFaults.length > 0 && (
            <p data-testid="planted">
              Planted:{' '}
              {report.plantedFaults
                .map((f) => `${faultInfo(f.id).title} from layer ${f.fromLayer}`)
                .join('; ')}
              .
            </p>
          )}
          {run.pending.includes('bisection') ? (
            <p className="muted pending" data-testid="bisection" data-pending="yes">
              <Term id="bisection">Bisection</Term>: running each fused kernel alone…
            </p>
          ) : (
            <Bisection report={report} />
          )}
          {run.pending.includes('determinism') ? (
            <p className="badge-line pending" data-testid="determinism" data-pending="yes">
              <span className="pill">checking…</span> running the fused path again to compare bits.
            </p>
          ) : (
            <Determinism report={report} />
          )}
          {run.status === 'cancelled' && (
            <p className="note warn" role="note" data-testid="incomplete">
              Cancelled: this report is incomplete
              {run.pending.length > 0 ? ` (${run.pending.join(', ')} not run)` : ''}.
            </p>
          )}
          <p className="muted small">
            Logits: fused vs reference {formatMetric(report.logits.propagated[report.metric], report.metric)},
            noise floor {formatMetric(report.logits.floor[report.metric], report.metric)} (
            {METRIC_LABELS[report.metric]}). {report.tokens.length} tokens, {report.spec.precision}, on{' '}
            {report.adapter.description || report.adapter.vendor}.
            {run.elapsedMs !== null ? ` Analysis took ${formatMs(run.elapsedMs)}.` : ''}
          </p>
        </section>

        {sharer && <SharerComparison sharer={sharer} report={report} />}

        <section className="card">
          <ErrorCurve
            report={report}
            metric={viewMetric}
            selectedLayer={selectedLayer}
            onSelect={selectLayer}
            fileBase={fileBase}
            controls={metricSelect}
            sharer={sharer ? { ratios: sharer.summary.ratios, metric: sharer.summary.metric } : null}
          />
          <fieldset className="layer-picker bare">
            <legend className="muted small">Open a layer's ops:</legend>
            {report.layers.map((l) => (
              <button
                key={l.layer}
                type="button"
                className={`small-btn${l.diverged ? ' diverged' : ''}`}
                aria-pressed={selectedLayer === l.layer}
                data-testid="layer-button"
                data-layer={l.layer}
                onClick={() => selectLayer(l.layer)}
              >
                {l.layer}
              </button>
            ))}
          </fieldset>
        </section>

        {selectedLayer !== null && (
          <section className="card drill" ref={drillRef}>
            <Drilldown
              report={report}
              layer={selectedLayer}
              metric={viewMetric}
              selectedTap={selectedTap}
              onSelectTap={selectTap}
              onClose={closeDrill}
              fileBase={fileBase}
              scale={largeType ? 17 / 12 : 13 / 12}
            />
            {report.why && report.why.layer === selectedLayer && (
              <WhyDrill
                why={report.why}
                report={report}
                fileBase={fileBase}
                scale={largeType ? 17 / 12 : 1}
              />
            )}
            {tap ? (
              <Histogram tap={tap} fileBase={fileBase} />
            ) : (
              <p className="muted small">Select an op above to see the histogram of its element errors.</p>
            )}
          </section>
        )}

        <section className="card">
          <Heatmap
            report={report}
            selectedLayer={selectedLayer}
            onSelect={selectLayer}
            fileBase={fileBase}
            tokenText={tokenText}
          />
        </section>

        <section className="card" aria-labelledby={`${ids}-gen`}>
          <h2 id={`${ids}-gen`}>Generated text</h2>
          {run.pending.includes('generation') ? (
            <Streaming stream={run.stream} total={report.spec.generate} />
          ) : (
            <Generation report={report} segments={run.segments} />
          )}
        </section>

        <section className="card" aria-labelledby={`${ids}-timing`} data-testid="timing">
          <h2 id={`${ids}-timing`}>Timing</h2>
          <TimingPanel report={report} fileBase={fileBase} />
        </section>
      </div>
    </ExportDetails.Provider>
  );
}
