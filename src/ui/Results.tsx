// The report of the last run: verdict, bisection and determinism in words, the charts (error curve, heatmap,
// per-op drill-down and histogram, timing), both paths' generated text side by side, and the exports.
import { useCallback, useEffect, useId, useRef } from 'react';
import { useStore } from 'zustand';
import type { Report } from '../compare/analyze';
import { FUSED_KERNELS } from '../engine/fused-kernels';
import { faultInfo } from '../run/faults';
import { METRICS, type Metric } from '../run/runspec';
import { buildSpec, specChanges } from '../state/spec';
import type { AppStore, TextSegments, TokenStream } from '../state/store';
import { ExportDetails } from './charts/ChartCard';
import { Drilldown } from './charts/Drilldown';
import { ErrorCurve } from './charts/ErrorCurve';
import { Heatmap } from './charts/Heatmap';
import { Histogram } from './charts/Histogram';
import { TimingPanel } from './charts/Timing';
import { download, exportName, layersToCsv, reportToJson, runDetails } from './export';
import { formatMetric, formatMs, formatRatio, METRIC_LABELS } from './format';
import { Term } from './Glossary';
import { SharerComparison, StoredBanner, useSharerFor } from './LinkPanels';

function kernelTitle(id: string): string {
  return FUSED_KERNELS.find((k) => k.id === id)?.title ?? id;
}

function Verdict({ report }: { report: Report }) {
  const fdl = report.firstDivergentLayer;
  const layer = fdl === null ? null : report.layers[fdl];
  const worst = report.layers.reduce((m, l) => Math.max(m, l.ratio), 0);
  const floor = <Term id="floor" />;
  const k = <Term id="threshold">k = {report.k}</Term>;
  let text: React.ReactNode;
  if (report.verdict === 'agree')
    text = (
      <>
        The paths agree: every layer stays within {report.k} × the {floor} (the{' '}
        <Term id="ratio">worst layer</Term> is at {formatRatio(worst)} its floor; {k}).
      </>
    );
  else if (layer)
    text = (
      <>
        Diverged at layer {layer.layer}: {formatRatio(layer.ratio)} the {floor} ({k}).{' '}
        {report.firstBornLayer !== null ? (
          <>
            The error is <Term id="born">born</Term> in layer {report.firstBornLayer}.
          </>
        ) : (
          'No layer creates it alone: it builds up across layers.'
        )}
      </>
    );
  else
    text = (
      <>
        The logits diverge (more than {report.k} × their {floor}) though no layer does on its own.
      </>
    );
  return (
    <p
      className={`verdict ${report.verdict}`}
      data-testid="verdict"
      data-verdict={report.verdict}
      data-layer={fdl ?? ''}
    >
      <span className="verdict-badge">{report.verdict === 'agree' ? 'agree' : 'diverged'}</span> {text}
    </p>
  );
}

export function Bisection({ report }: { report: Report }) {
  const rows = report.bisection;
  if (!rows)
    return (
      <p className="muted" data-testid="bisection">
        Bisection not run: the paths agree.
      </p>
    );
  const hits = rows.filter((r) => r.reproduces);
  return (
    <div data-testid="bisection">
      {hits.length === 0 ? (
        <p>No single fused kernel reproduces the divergence alone: it takes several of them together.</p>
      ) : (
        <ul className="plain">
          {hits.map((r) => (
            <li
              key={r.kernel}
              data-testid="bisection-hit"
              data-kernel={r.kernel}
              data-layer={r.firstLayer ?? ''}
            >
              divergence reproduced by <code>{r.kernel}</code> from layer {r.firstLayer}{' '}
              <span className="muted">
                ({kernelTitle(r.kernel)} alone, {formatRatio(r.ratio)} the floor)
              </span>
            </li>
          ))}
        </ul>
      )}
      <p className="muted small">
        <Term id="bisection">Bisection</Term>: each switched-on fused kernel was run alone:{' '}
        {rows.map((r) => `${r.kernel} ${r.reproduces ? 'reproduces' : 'does not'}`).join(', ')}.
      </p>
    </div>
  );
}

export function Determinism({ report }: { report: Report }) {
  const d = report.determinism;
  if (d.runs.length === 0)
    return (
      <p className="badge-line" data-testid="determinism" data-identical="unknown">
        <span className="pill">not checked</span>
      </p>
    );
  return (
    <div className="badge-line" data-testid="determinism" data-identical={d.identical ? 'yes' : 'no'}>
      <span className={`pill ${d.identical ? 'good' : 'bad'}`}>
        {d.identical ? 'identical' : 'nondeterministic'}
      </span>{' '}
      {d.identical ? (
        <span>
          The fused path gave bit-identical results over {d.runs.length + 1} runs (
          {d.runs.map((r) => r.schedule).join(', ')}
          {d.runs.some((r) => r.schedule.includes('query tile')) && (
            <>
              ; <Term id="queryTile">what is a query tile?</Term>
            </>
          )}
          ).
        </span>
      ) : (
        <span>
          Bits differ between fused runs:{' '}
          {d.differences
            .slice(0, 4)
            .map((x) => `${x.tensor} (${x.count} elements, first at index ${x.firstIndex}, “${x.schedule}”)`)
            .join('; ')}
          {d.differences.length > 4 ? `; and ${d.differences.length - 4} more` : ''}. A race or an
          uninitialised read.
        </span>
      )}
    </div>
  );
}

function Continuation({
  label,
  text,
  ids,
  segments,
  first,
}: {
  label: string;
  text: string | null;
  ids: number[];
  segments: TextSegments | null;
  first: number | null;
}) {
  let body: React.ReactNode;
  if (text === null) {
    body = ids.map((id, i) => (
      <span
        // biome-ignore lint/suspicious/noArrayIndexKey: a token's position is its identity here
        key={`${i}-${id}`}
        className={i === first ? 'first-diff' : undefined}
        data-testid={i === first ? 'first-diff' : undefined}
      >
        {i ? ', ' : ''}
        {id}
      </span>
    ));
  } else if (segments) {
    body = (
      <>
        {segments.before}
        <mark
          className="first-diff"
          data-testid="first-diff"
          data-ws={segments.at.trim() === '' ? 'yes' : undefined}
        >
          {segments.at}
        </mark>
        {segments.after}
      </>
    );
  } else body = text;
  return (
    <div className="continuation">
      <h4 className="sub">{label}</h4>
      <div
        className="output"
        data-testid={`gen-${label.startsWith('Reference') ? 'reference' : 'fused'}`}
        data-ids={ids.join(',')}
      >
        {body}
      </div>
    </div>
  );
}

function Generation({
  report,
  segments,
}: {
  report: Report;
  segments: { reference: TextSegments; fused: TextSegments } | null;
}) {
  const g = report.generation;
  if (!g) return <p className="muted">No tokens were generated (generation length 0).</p>;
  const prompt =
    'text' in report.spec.prompt ? report.spec.prompt.text : report.spec.prompt.tokens.join(', ');
  return (
    <div data-testid="generation" data-first-difference={g.firstDifference ?? ''}>
      <p className="muted small">
        Prompt:{' '}
        <span className="prompt-text" data-testid="generation-prompt">
          {prompt}
        </span>
      </p>
      <p data-testid="generation-summary">
        {g.firstDifference === null
          ? `Both paths generate the same ${g.reference.ids.length} tokens.`
          : `The continuations part at generated token ${g.firstDifference} (highlighted).`}
      </p>
      <div className="side-by-side">
        <Continuation
          label="Reference path"
          text={g.reference.text}
          ids={g.reference.ids}
          segments={segments?.reference ?? null}
          first={g.firstDifference}
        />
        <Continuation
          label="Fused path"
          text={g.fused.text}
          ids={g.fused.ids}
          segments={segments?.fused ?? null}
          first={g.firstDifference}
        />
      </div>
    </div>
  );
}

/** Both paths' tokens as they are generated, with a counter. */
function Streaming({ stream, total }: { stream: TokenStream | null; total: number }) {
  const paths = [
    ['Reference path', 'reference'],
    ['Fused path', 'fused'],
  ] as const;
  return (
    <div data-testid="generation-stream">
      <p className="muted" data-testid="stream-count">
        Generating: reference {stream?.reference.ids.length ?? 0} / {total}, fused{' '}
        {stream?.fused.ids.length ?? 0} / {total} tokens.
      </p>
      <div className="side-by-side">
        {paths.map(([label, key]) => {
          const p = stream?.[key];
          return (
            <div className="continuation" key={key}>
              <h4 className="sub">{label}</h4>
              <div className="output" data-testid={`stream-${key}`} data-count={p?.ids.length ?? 0}>
                {p ? (p.text ?? p.ids.join(', ')) : '…'}
              </div>
            </div>
          );
        })}
      </div>
    </div>
  );
}

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
    if (!built.ok) return 'the settings (not a valid run now)';
    return specChanges(report.spec, built.spec).join(', ');
  });
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
    document
      .querySelector('[data-testid="verdict"]')
      ?.scrollIntoView({ block: 'center', behavior: 'instant' as ScrollBehavior });
  }, [hasVerdict, run.startedAt]);
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
          <Verdict report={report} />
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
          <section className="card drill">
            <Drilldown
              report={report}
              layer={selectedLayer}
              metric={viewMetric}
              selectedTap={selectedTap}
              onSelectTap={selectTap}
              onClose={() => selectLayer(null)}
              fileBase={fileBase}
            />
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
