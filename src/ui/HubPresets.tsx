// One click to a real checkpoint: EleutherAI's Pythia-70m/160m/410m on the Hugging Face Hub (pinned revisions,
// src/run/hub.ts). Picking one shows its size before anything is downloaded (the table's, then the server's
// answer to HEAD) and the GPU memory it needs; Download streams it with progress and Cancel (in the model
// panel above), checks it against the pinned sha256 and keeps it in this browser, so the next load needs no
// network. Everything shown is text from this build's table or numbers from the server.
import { useEffect, useId, useMemo, useState } from 'react';
import { useStore } from 'zustand';
import { type HubPresetId, type ResolvedPreset, readHubOverride, resolvePresets } from '../run/hub';
import type { Controller } from '../state/controller';
import type { AppStore } from '../state/store';
import type { UrlProbe } from '../worker/api';
import { formatBytes, formatCount } from './format';

type ProbeState =
  | { id: HubPresetId; state: 'pending' }
  | { id: HubPresetId; state: 'done'; probe: UrlProbe | null }
  | { id: HubPresetId; state: 'error'; message: string };

function storage(): Storage | null {
  try {
    return typeof localStorage === 'undefined' ? null : localStorage;
  } catch {
    return null;
  }
}

function errorText(e: unknown): string {
  if (typeof e === 'object' && e !== null && typeof (e as { message?: unknown }).message === 'string')
    return (e as { message: string }).message;
  return String(e);
}

/** The download size in words: the server's answer to HEAD once it came, the table's until then. */
function SizeLine({ p, probe, cached }: { p: ResolvedPreset; probe: ProbeState | null; cached: boolean }) {
  const table = `${p.exact ? '' : '≈ '}${formatBytes(p.weightsBytes)}`;
  if (cached)
    return (
      <span data-testid="preset-size" data-state="cached">
        kept in this browser: loads without downloading ({formatBytes(p.weightsBytes)} of weights)
      </span>
    );
  if (!probe || probe.state === 'pending')
    return (
      <span data-testid="preset-size" data-state="table">
        {table} of weights <span className="muted">(asking the server…)</span>
      </span>
    );
  if (probe.state === 'error')
    return (
      <span data-testid="preset-size" data-state="error">
        {table} of weights <span className="muted">(the server could not be asked: {probe.message})</span>
      </span>
    );
  const pr = probe.probe;
  const w = pr?.files.find((f) => f.file === 'model.safetensors')?.bytes ?? null;
  if (!pr || pr.totalBytes === null || w === null)
    return (
      <span data-testid="preset-size" data-state="unknown">
        {table} of weights <span className="muted">(the server did not give the size)</span>
      </span>
    );
  const off = Math.abs(w - p.weightsBytes) > (p.exact ? 0 : 0.01 * p.weightsBytes);
  return (
    <span data-testid="preset-size" data-state="confirmed" data-bytes={pr.totalBytes}>
      {formatBytes(pr.totalBytes)} in all ({formatBytes(w)} of weights), confirmed by the server
      {off && (
        <span className="warn-text">
          {' '}
          — the table expects {table}: the download is checked against the sha256 either way
        </span>
      )}
    </span>
  );
}

export function HubPresets({ store, controller }: { store: AppStore; controller: Controller }) {
  const override = useMemo(() => readHubOverride(storage()), []);
  const presets = useMemo(() => resolvePresets(override), [override]);
  const canLoad = useStore(
    store,
    (s) => s.initStatus === 'ready' && s.modelStatus !== 'loading' && s.run.status !== 'running',
  );
  const loadedSha = useStore(store, (s) => s.model?.sha256 ?? null);
  const [cached, setCached] = useState<ReadonlySet<string>>(new Set());
  const [selected, setSelected] = useState<HubPresetId | null>(null);
  const [probe, setProbe] = useState<ProbeState | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const ids = useId();

  // What this browser keeps, read again whenever the loaded model changes (a download is cached as it loads).
  // biome-ignore lint/correctness/useExhaustiveDependencies: loadedSha is the trigger, not an input
  useEffect(() => {
    let live = true;
    void controller.cachedModelSha256s().then((list) => {
      if (live) setCached(new Set(list));
    });
    return () => {
      live = false;
    };
  }, [controller, loadedSha]);

  const p = presets.find((x) => x.id === selected) ?? null;
  const isCached = p ? cached.has(p.sha256) : false;

  const pick = (x: ResolvedPreset) => {
    setSelected(x.id);
    setNotice(null);
    if (cached.has(x.sha256)) return; // nothing to ask the network
    if (probe?.id === x.id && probe.state !== 'error') return;
    setProbe({ id: x.id, state: 'pending' });
    controller.probeModelUrl(x.url).then(
      (r) => setProbe((cur) => (cur?.id === x.id ? { id: x.id, state: 'done', probe: r } : cur)),
      (e: unknown) =>
        setProbe((cur) => (cur?.id === x.id ? { id: x.id, state: 'error', message: errorText(e) } : cur)),
    );
  };

  const load = async (x: ResolvedPreset) => {
    setNotice(null);
    const before = store.getState().model?.name ?? null;
    const outcome = await controller.loadPinned({ url: x.url, sha256: x.sha256 });
    if (outcome === 'cancelled')
      setNotice(`Download cancelled${before ? `: ${before} is still loaded` : ''}.`);
  };

  const pr = p && probe?.id === p.id && probe.state === 'done' ? probe.probe : null;
  const refusal = pr?.refusal ?? null;
  const loaded = p !== null && loadedSha === p.sha256;

  return (
    <section className="hub" data-testid="hub-presets" aria-labelledby={`${ids}-title`}>
      <h3 className="hub-title" id={`${ids}-title`}>
        Pythia from the Hugging Face Hub
      </h3>
      {override && (
        <p className="note warn small" data-testid="hub-override">
          Test setting: these presets come from <span className="mono">{override.origin}</span>, not from
          huggingface.co (set in this browser’s storage, key divergence-explorer.hub-test-server).
        </p>
      )}
      <div className="hub-list" role="radiogroup" aria-label="Pythia checkpoints">
        {presets.map((x) => {
          const c = cached.has(x.sha256);
          return (
            // biome-ignore lint/a11y/useSemanticElements: a row of buttons that act as radio choices
            <button
              key={x.id}
              type="button"
              role="radio"
              aria-checked={selected === x.id}
              className="hub-preset"
              data-testid={`preset-${x.id}`}
              data-cached={c ? 'yes' : 'no'}
              onClick={() => pick(x)}
            >
              <strong className="hub-name">{x.label.replace(/^Pythia-/, '')}</strong>
              <span className="small">
                {x.exact ? '' : '≈ '}
                {formatBytes(x.weightsBytes)}
              </span>
              <span className="small muted">
                {x.layers} layers · d {x.d}
              </span>
              {c && <span className="small hub-kept">in this browser</span>}
            </button>
          );
        })}
      </div>
      {p && (
        <div className="hub-detail" data-testid="preset-detail" data-preset={p.id}>
          <dl className="facts">
            <dt>Repository</dt>
            <dd>
              <span className="mono">{p.repo}</span> at revision{' '}
              <span className="mono" title={p.revision}>
                {p.revision.slice(0, 7)}
              </span>
            </dd>
            <dt>Size</dt>
            <dd>
              <SizeLine p={p} probe={probe?.id === p.id ? probe : null} cached={isCached} />
            </dd>
            <dt>Parameters</dt>
            <dd>{formatCount(pr?.params ?? p.params)}</dd>
            {pr && (
              <>
                <dt>GPU memory</dt>
                <dd data-testid="preset-gpu">
                  at least {formatBytes(pr.minGpuBytes)}
                  {pr.budgetBytes !== null
                    ? ` of the ${formatBytes(pr.budgetBytes)} budget`
                    : pr.refusal === null
                      ? ' (this adapter can allocate it)'
                      : ''}
                </dd>
              </>
            )}
            <dt>sha256</dt>
            <dd>
              <span className="mono small" data-testid="preset-sha256">
                {p.sha256}
              </span>
            </dd>
          </dl>
          {refusal && (
            <p className="note warn" data-testid="preset-refusal">
              Too large for this adapter: {refusal}.
            </p>
          )}
          <div className="actions">
            <button
              type="button"
              className="primary"
              data-testid="preset-load"
              disabled={!canLoad || refusal !== null || loaded}
              onClick={() => void load(p)}
            >
              {loaded
                ? `${p.label} is loaded`
                : isCached
                  ? `Load ${p.label} from this browser`
                  : `Download ${p.label}${pr?.totalBytes ? ` (${formatBytes(pr.totalBytes)})` : ''}`}
            </button>
          </div>
        </div>
      )}
      {notice && (
        <p className="muted small" data-testid="hub-notice">
          {notice}
        </p>
      )}
      <p className="muted small">
        Fetched from huggingface.co straight into this browser (the Hub allows it by CORS), checked against
        the sha256 pinned here, and kept in this browser for the next visit.
      </p>
    </section>
  );
}
