// What a link brings: the one message for a link that cannot be opened, the banner of a permalink (its
// settings in words, the sharer's adapter, "Run this comparison"), the request for a model the link names
// (consent to download, or the files from disk, checked against the sha256), the sharer-vs-viewer
// comparison once the viewer's run is done, and the note on a report re-opened from the history. Everything
// from a link is rendered as text.
import { type DragEvent, useId, useState } from 'react';
import { useStore } from 'zustand';
import type { Report } from '../compare/analyze';
import { adapterLine, type Sharer } from '../run/permalink';
import type { Controller } from '../state/controller';
import { settingsMatchLink } from '../state/link-settings';
import { settingsOf } from '../state/settings';
import { AGREE_FACTOR, agreementSentence, compareWithSharer, sameCause } from '../state/sharer';
import { modelMatches, sameRun } from '../state/spec';
import { type AppStore, canRun } from '../state/store';
import { shortCause } from './cause-words';
import { ErrorAlert } from './ErrorAlert';
import { formatRatio } from './format';
import { NeedSize } from './NeedSize';
import { clearFragment } from './nav';
import { describeSpec, familyWords, firstLayerWords, formatWhen } from './spec-words';

export function LinkErrorAlert({ store }: { store: AppStore }) {
  const linkError = useStore(store, (s) => s.linkError);
  const setLinkError = useStore(store, (s) => s.setLinkError);
  if (!linkError) return null;
  return (
    <div className="alert" role="alert" data-testid="link-error">
      <div>
        <strong>This link cannot be opened</strong>
        <p data-testid="link-error-message">{linkError}</p>
        <p>Nothing was changed: your settings are as they were.</p>
      </div>
      <button
        type="button"
        className="ghost"
        onClick={() => {
          setLinkError(null);
          clearFragment();
        }}
        aria-label="Dismiss the link error"
      >
        ×
      </button>
    </div>
  );
}

/** Whether the linked run can start now: Run is possible and the loaded model is the link's. */
function useLinkedRunnable(store: AppStore): boolean {
  return useStore(store, (s) => !!s.linked && canRun(s) && modelMatches(s.linked.spec.model, s));
}

/** Whether the settings shown still describe the linked run (null: cannot tell, no model loaded). */
/** Whether the settings are still the link's (null without a link): the model is not a setting (see link-settings.ts). */
function useSettingsMatchLink(store: AppStore): boolean | null {
  return useStore(store, (s) => {
    if (!s.linked) return null;
    return settingsMatchLink(
      s.settings,
      s.linked.spec,
      s.customPending,
      s.model?.tokenizer === 'token ids only',
    );
  });
}

export function RunLinkedButton({ store, controller }: { store: AppStore; controller: Controller }) {
  const runnable = useLinkedRunnable(store);
  const running = useStore(store, (s) => s.run.status === 'running');
  const origin = useStore(store, (s) => s.linked?.origin);
  const waitingFor = useStore(store, (s) => s.waitingFor);
  return (
    <>
      <button
        type="button"
        className="primary big"
        data-testid="run-linked"
        disabled={!runnable}
        onClick={() => void controller.run()}
      >
        {running ? 'Running…' : origin === 'scenario' ? 'Run this scenario' : 'Run this comparison'}
      </button>
      {waitingFor && (
        <span className="run-wait" data-testid="run-linked-wait">
          Waiting for {waitingFor}…
        </span>
      )}
      <ErrorAlert store={store} controller={controller} place="run-linked" />
    </>
  );
}

function SharerLine({ sharer }: { sharer: Sharer }) {
  return (
    <p data-testid="sharer-line">
      The sharer ran it on <span className="mono">{sharer.adapter}</span> and saw{' '}
      <strong>{firstLayerWords(sharer.summary.firstDivergentLayer)}</strong>. Their per-layer result is shown
      beside yours once your run is done.
    </p>
  );
}

export function LinkBanner({ store, controller }: { store: AppStore; controller: Controller }) {
  const linked = useStore(store, (s) => s.linked);
  const modelOk = useStore(store, (s) => (s.linked ? modelMatches(s.linked.spec.model, s) : false));
  const modelStatus = useStore(store, (s) => s.modelStatus);
  const matches = useSettingsMatchLink(store);
  const setSettings = useStore(store, (s) => s.setSettings);
  const ids = useId();
  if (linked?.origin !== 'link') return null;
  return (
    <section className="card link-card" data-testid="link-banner" aria-labelledby={`${ids}-title`}>
      <div className="card-head">
        <h2 id={`${ids}-title`}>Opened from a link</h2>
        <button
          type="button"
          className="ghost"
          aria-label="Close the link"
          onClick={() => {
            store.setState({ linked: null });
            clearFragment();
          }}
        >
          ×
        </button>
      </div>
      <p>Every setting was restored from the link; it runs on your own GPU when you press the button.</p>
      <dl className="facts spec-facts">
        {describeSpec(linked.spec).map((l) => (
          <div key={l.label} className="fact">
            <dt>{l.label}</dt>
            <dd data-testid={l.testId}>{l.value}</dd>
          </div>
        ))}
      </dl>
      {linked.sharer && <SharerLine sharer={linked.sharer} />}
      <div className="actions">
        <RunLinkedButton store={store} controller={controller} />
        {linked.autorunPending && (
          <span className="muted small" data-testid="autorun-pending">
            The link asked to run at once: it starts when the model is ready.
          </span>
        )}
      </div>
      {!modelOk && (
        <p className="muted small" data-testid="link-model-wait">
          {modelStatus === 'loading'
            ? 'Loading the model the link names…'
            : 'The model the link names is not loaded yet (see above).'}
        </p>
      )}
      {matches === false && (
        <p className="note warn" data-testid="link-settings-changed">
          Your settings differ from the link’s now.{' '}
          <button type="button" className="small-btn" onClick={() => setSettings(settingsOf(linked.spec))}>
            Restore the link’s settings
          </button>
        </p>
      )}
    </section>
  );
}

export function ModelNeedCard({ store, controller }: { store: AppStore; controller: Controller }) {
  const need = useStore(store, (s) => s.modelNeed);
  const canLoad = useStore(
    store,
    (s) => s.initStatus === 'ready' && s.modelStatus !== 'loading' && s.run.status !== 'running',
  );
  const loading = useStore(store, (s) => s.modelStatus === 'loading');
  const [over, setOver] = useState(false);
  const ids = useId();
  if (!need) return null;
  const ref = need.ref;
  const sha = <span className="mono">{ref.sha256}</span>;
  const whose = need.from === 'link' ? 'This link’s run' : 'This stored run';
  const onFiles = (files: File[]) => {
    if (files.length && canLoad)
      void controller.loadFromFiles(files, { expectSha256: ref.sha256, expectFiles: ref.files });
  };
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setOver(false);
    onFiles(Array.from(e.dataTransfer.files));
  };
  return (
    <section
      className="card need-card"
      data-testid="model-need"
      data-kind={ref.kind}
      aria-labelledby={`${ids}-title`}
    >
      {ref.kind === 'url' ? (
        <>
          <h2 id={`${ids}-title`}>{whose} uses a model from the web</h2>
          <p>
            It names the folder{' '}
            <span className="mono" data-testid="need-url">
              {ref.url}
            </span>
            <span data-testid="need-family">{familyWords(ref)}</span> and weights with sha256 {sha}
            {ref.files ? ` (${Object.keys(ref.files).length} shards, each with its own sha256)` : ''}. Nothing
            is downloaded until you agree; the weights are then checked against that hash and refused if they
            differ.
          </p>
          <NeedSize url={ref.url} controller={controller} />
          <button
            type="button"
            className="primary"
            data-testid="fetch-model"
            disabled={!canLoad}
            onClick={() => void controller.fetchNeededModel()}
          >
            {loading ? 'Downloading…' : 'Download and check the model'}
          </button>
        </>
      ) : (
        <>
          <h2 id={`${ids}-title`}>{whose} uses a model from the sharer’s disk</h2>
          <p>
            The sharer loaded <strong data-testid="need-name">{ref.name ?? 'a model'}</strong>
            <span data-testid="need-family">{familyWords(ref)}</span> from their disk (weights sha256 {sha}).
            Choose or drop its files — <code>config.json</code>, <code>model.safetensors</code> and{' '}
            <code>tokenizer.json</code> — and they are checked against that hash. Once loaded they are kept in
            this browser, so a reload does not ask again.
          </p>
          <label
            className={`dropzone${over ? ' over' : ''}`}
            data-testid="need-dropzone"
            onDragOver={(e) => {
              e.preventDefault();
              setOver(true);
            }}
            onDragLeave={() => setOver(false)}
            onDrop={onDrop}
          >
            <span>Choose or drop the model’s files</span>
            <input
              type="file"
              multiple
              accept=".json,.safetensors"
              data-testid="need-files"
              disabled={!canLoad}
              onChange={(e) => {
                const files = Array.from(e.target.files ?? []);
                e.target.value = '';
                onFiles(files);
              }}
            />
          </label>
        </>
      )}
      <ErrorAlert store={store} controller={controller} place="model-need" />
    </section>
  );
}

/** The sharer's result against the viewer's, when the report shown is the linked run. */
export function useSharerFor(store: AppStore, report: Report | null): Sharer | null {
  return useStore(store, (s) =>
    s.linked?.sharer && report && sameRun(report.spec, s.linked.spec) ? s.linked.sharer : null,
  );
}

/** The cause the sharer's run found beside the viewer's own (when the link carries one). */
function SharerCause({ sharer, report }: { sharer: Sharer; report: Report }) {
  const theirs = sharer.summary.cause;
  if (theirs === undefined) return null;
  const yours = report.why === undefined ? undefined : shortCause(report.why);
  const said = (c: { id: string; words: string } | null) =>
    c ? (
      <>
        {c.words} <code>[{c.id}]</code>
      </>
    ) : (
      'none (nothing born)'
    );
  const same = sameCause(theirs, yours);
  return (
    <p
      className="sharer-cause"
      data-testid="sharer-cause"
      data-same={same === null ? '' : same ? 'yes' : 'no'}
    >
      <strong>Cause</strong> — the sharer’s: <span data-testid="sharer-cause-theirs">{said(theirs)}</span>
      {'; yours: '}
      <span data-testid="sharer-cause-yours">{yours === undefined ? 'still looking…' : said(yours)}</span>
      {same === null ? '' : same ? ' (the same)' : ' (different)'}.
    </p>
  );
}

export function SharerComparison({ sharer, report }: { sharer: Sharer; report: Report }) {
  const a = compareWithSharer(sharer.summary, report);
  const ids = useId();
  return (
    <section
      className="card"
      data-testid="sharer-comparison"
      data-agree={a.agree ? 'yes' : 'no'}
      data-same-first={a.sameFirst ? 'yes' : 'no'}
      aria-labelledby={`${ids}-title`}
    >
      <h2 id={`${ids}-title`}>The sharer’s run and yours</h2>
      <p className={`verdict ${a.agree ? 'agree' : 'diverged'}`} data-testid="sharer-verdict">
        <span className="verdict-badge">{a.agree ? 'same result' : 'different'}</span> {agreementSentence(a)}
      </p>
      <SharerCause sharer={sharer} report={report} />
      <p className="muted small">
        Theirs: <span className="mono">{sharer.adapter}</span>. Yours:{' '}
        <span className="mono">{adapterLine(report.adapter)}</span>. Ratios are error ÷ noise floor (
        {sharer.summary.metric}); under the threshold (k = {report.k}) they are rounding noise and may differ
        freely, above it they should agree within a factor of {AGREE_FACTOR}.
      </p>
      <table className="compare-table" data-testid="sharer-table">
        <thead>
          <tr>
            <th scope="col">Layer</th>
            <th scope="col">Sharer</th>
            <th scope="col">You</th>
            <th scope="col">Factor</th>
            <th scope="col">Agree</th>
          </tr>
        </thead>
        <tbody>
          {a.layers.map((l) => (
            <tr
              key={l.layer}
              data-testid="sharer-row"
              data-layer={l.layer}
              data-agree={l.agree ? 'yes' : 'no'}
            >
              <th scope="row">
                {l.layer}
                {l.layer === a.sharerFirst ? ' ◆' : ''}
              </th>
              <td>{l.sharer === null ? '—' : formatRatio(l.sharer)}</td>
              <td>{l.viewer === null ? '—' : formatRatio(l.viewer)}</td>
              <td>{l.factor === null ? '—' : Number.isFinite(l.factor) ? l.factor.toPrecision(3) : '∞'}</td>
              <td>{l.agree ? 'yes' : 'no'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="muted small">◆ the sharer’s first divergent layer.</p>
    </section>
  );
}

export function StoredBanner({ store }: { store: AppStore }) {
  const stored = useStore(store, (s) => s.storedRun);
  if (!stored) return null;
  return (
    <p className="note stored" data-testid="stored-banner" role="status">
      A stored run from {formatWhen(stored.createdAt)}: its report as it was saved, not re-run. Its settings
      are restored; press Run to run it again on this GPU.
    </p>
  );
}
