// A Hub model as looked up, before its download: the commit its revision names, its weights (one file or the
// shards of an index) with sizes and sha256 from the Hub's listing, the parameters and GPU memory from its
// config.json, the refusal when this adapter cannot hold it, and Download (or "load from this browser" when
// its single weights file is kept here). Everything shown is the Hub's answer or numbers from it, as text.
import { useCallback, useState } from 'react';
import { useStore } from 'zustand';
import type { Controller } from '../state/controller';
import type { AppStore } from '../state/store';
import type { HubProbe } from '../worker/api';
import { formatBytes, formatCount } from './format';

/** A repository's lookup through the worker: pending, its probe, or one line of error. */
export type Lookup =
  | { key: string; state: 'pending' }
  | { key: string; state: 'done'; probe: HubProbe }
  | { key: string; state: 'error'; message: string };

export function HubDetail({
  store,
  controller,
  lookup,
  cached,
}: {
  store: AppStore;
  controller: Controller;
  lookup: Lookup;
  cached: ReadonlySet<string>;
}) {
  const canLoad = useStore(
    store,
    (s) => s.initStatus === 'ready' && s.modelStatus !== 'loading' && s.run.status !== 'running',
  );
  const loadedSha = useStore(store, (s) => s.model?.sha256 ?? null);
  const [notice, setNotice] = useState<string | null>(null);
  // The answer in view of its control: a preset clicked near the rail's fold answers below it (its sizes, family and
  // Download), so each new state of a lookup is scrolled to, as little as it takes.
  // biome-ignore lint/correctness/useExhaustiveDependencies: called again for each new lookup and state
  const inView = useCallback(
    (el: HTMLElement | null) =>
      el?.scrollIntoView({ block: 'nearest', behavior: 'instant' as ScrollBehavior }),
    [lookup.key, lookup.state],
  );
  if (lookup.state === 'pending')
    return (
      <p
        ref={inView}
        className="small"
        data-testid="hub-detail"
        data-state="pending"
        data-key={lookup.key}
        role="status"
      >
        Asking the Hub about {lookup.key}…
      </p>
    );
  if (lookup.state === 'error')
    return (
      <p
        ref={inView}
        className="note warn"
        data-testid="hub-detail"
        data-state="error"
        data-key={lookup.key}
        role="alert"
      >
        {lookup.message}
      </p>
    );
  const p = lookup.probe;
  const name = p.repo.split('/')[1] ?? p.repo;
  const isCached = !p.sharded && cached.has(p.sha256);
  const loaded = loadedSha === p.sha256;
  const weights = p.weights.reduce((a, w) => a + w.size, 0);
  const load = async () => {
    setNotice(null);
    const before = store.getState().model?.name ?? null;
    const files = p.sharded ? Object.fromEntries(p.weights.map((w) => [w.path, w.sha256])) : undefined;
    // The sizes the button shows are the sizes the download is held to: a file sent longer or shorter is refused.
    const bytes: Record<string, number> = {
      'config.json': p.configBytes,
      ...(p.tokenizerBytes === null ? {} : { 'tokenizer.json': p.tokenizerBytes }),
      ...Object.fromEntries(p.weights.map((w) => [w.path, w.size])),
    };
    const outcome = await controller.loadPinned({ url: p.url, sha256: p.sha256, files, bytes });
    if (outcome === 'cancelled')
      setNotice(`Download cancelled${before ? `: ${before} is still loaded` : ''}.`);
  };
  return (
    <div
      ref={inView}
      className="hub-detail"
      data-testid="hub-detail"
      data-state="done"
      data-repo={p.repo}
      data-key={lookup.key}
    >
      <dl className="facts">
        <dt>Repository</dt>
        <dd>
          <span className="mono">{p.repo}</span> at <span className="mono">{p.revision}</span>
          {p.revision !== p.commit && (
            <>
              {' '}
              = commit{' '}
              <span className="mono" title={p.commit} data-testid="hub-commit" data-commit={p.commit}>
                {p.commit.slice(0, 7)}
              </span>
            </>
          )}
        </dd>
        {p.family && (
          <>
            <dt>Family</dt>
            <dd data-testid="hub-family" data-family={p.family}>
              {p.family === 'llama' ? `Llama family (${p.flavour})` : 'GPT-NeoX'}
            </dd>
          </>
        )}
        <dt>Weights</dt>
        <dd data-testid="hub-weights">
          {p.sharded ? `${p.weights.length} shard${p.weights.length === 1 ? '' : 's'}` : 'model.safetensors'},{' '}
          {formatBytes(weights)}
        </dd>
        <dt>Size</dt>
        <dd data-testid="preset-size" data-bytes={p.totalBytes} data-state={isCached ? 'cached' : 'listed'}>
          {isCached
            ? `kept in this browser: loads without downloading (${formatBytes(p.totalBytes)})`
            : `${formatBytes(p.totalBytes)} to download, as the Hub lists it`}
        </dd>
        <dt>Tokenizer</dt>
        <dd data-testid="hub-tokenizer">
          {p.tokenizerBytes === null
            ? 'none (no tokenizer.json): the prompt is token ids'
            : `tokenizer.json, ${formatBytes(p.tokenizerBytes)}`}
        </dd>
        <dt>Parameters</dt>
        <dd>{formatCount(p.params)}</dd>
        <dt>GPU memory</dt>
        <dd data-testid="preset-gpu">
          at least {formatBytes(p.minGpuBytes)}
          {p.budgetBytes !== null
            ? ` of the ${formatBytes(p.budgetBytes)} budget`
            : p.refusal === null
              ? ' (this adapter can allocate it)'
              : ''}
        </dd>
        <dt>sha256</dt>
        <dd>
          <span className="mono small" data-testid="preset-sha256">
            {p.sha256}
          </span>
          {p.sharded && (
            <span className="small muted"> (of the shards’ sha256 list; each shard is checked)</span>
          )}
        </dd>
      </dl>
      {p.refusal && (
        <p className="note warn" data-testid="preset-refusal">
          Too large for this adapter: {p.refusal}.
        </p>
      )}
      <div className="actions">
        <button
          type="button"
          className="primary"
          data-testid="preset-load"
          disabled={!canLoad || p.refusal !== null || loaded}
          onClick={() => void load()}
        >
          {loaded
            ? `${name} is loaded`
            : isCached
              ? `Load ${name} from this browser`
              : `Download ${name} (${formatBytes(p.totalBytes)})`}
        </button>
      </div>
      {notice && (
        <p className="muted small" data-testid="hub-notice">
          {notice}
        </p>
      )}
    </div>
  );
}
