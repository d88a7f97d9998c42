// What runs here: the WebGPU adapter (vendor, architecture, features, a few limits) and the loaded model.
import { useStore } from 'zustand';
import type { AppStore } from '../state/store';

const LIMITS_SHOWN: [string, string][] = [
  ['maxStorageBufferBindingSize', 'Storage binding'],
  ['maxBufferSize', 'Buffer size'],
  ['maxComputeWorkgroupStorageSize', 'Workgroup storage'],
  ['maxComputeInvocationsPerWorkgroup', 'Invocations / workgroup'],
];

/** Bytes as B / KiB / MiB / GiB with at most one decimal. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 || Number.isInteger(v) ? v : v.toFixed(1)} ${units[u]}`;
}

function formatCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} k`;
  return String(n);
}

function Badge({ name, on }: { name: string; on: boolean }) {
  return (
    <li className={on ? 'badge on' : 'badge off'} data-feature={name} data-on={on ? 'yes' : 'no'}>
      <span className="badge-name">{name}</span> <span className="badge-value">{on ? 'yes' : 'no'}</span>
    </li>
  );
}

export function AdapterPanel({ store }: { store: AppStore }) {
  const status = useStore(store, (s) => s.initStatus);
  const adapter = useStore(store, (s) => s.adapter);
  const features = useStore(store, (s) => s.features);
  return (
    <section
      className="card"
      data-testid="adapter-panel"
      data-status={status}
      aria-labelledby="adapter-title"
    >
      <h2 id="adapter-title">GPU</h2>
      {!adapter || !features ? (
        <p className="muted">
          {status === 'error' ? 'No GPU device could be started.' : 'Looking for a WebGPU adapter…'}
        </p>
      ) : (
        <>
          <dl className="facts">
            <dt>Vendor</dt>
            <dd data-testid="adapter-vendor">{adapter.vendor || '—'}</dd>
            <dt>Architecture</dt>
            <dd>{adapter.architecture || '—'}</dd>
            <dt>Description</dt>
            <dd>{adapter.description || adapter.device || '—'}</dd>
          </dl>
          <h3 className="sub">Features</h3>
          <ul className="badges" aria-label="Optional GPU features">
            <Badge name="shader-f16" on={features.shaderF16} />
            <Badge name="subgroups" on={features.subgroups} />
            <Badge name="timestamp-query" on={features.timestampQuery} />
          </ul>
          <h3 className="sub">Limits</h3>
          <dl className="facts">
            {LIMITS_SHOWN.map(([key, label]) =>
              adapter.limits[key] === undefined ? null : (
                <div key={key} className="fact">
                  <dt title={key}>{label}</dt>
                  <dd>
                    {key === 'maxComputeInvocationsPerWorkgroup'
                      ? adapter.limits[key]
                      : formatBytes(adapter.limits[key])}
                  </dd>
                </div>
              ),
            )}
          </dl>
        </>
      )}
    </section>
  );
}

export function ModelPanel({ store }: { store: AppStore }) {
  const status = useStore(store, (s) => s.modelStatus);
  const model = useStore(store, (s) => s.model);
  const progress = useStore(store, (s) => s.modelProgress);
  const cfg = model?.config;
  return (
    <section className="card" data-testid="model-panel" data-status={status} aria-labelledby="model-title">
      <h2 id="model-title">Model</h2>
      {status === 'idle' && <p className="muted">Waiting for the GPU…</p>}
      {status === 'loading' && (
        <div className="load">
          <label htmlFor="model-progress">
            {progress?.file === 'gpu' ? 'Uploading weights to the GPU…' : 'Downloading the model…'}
          </label>
          <progress
            id="model-progress"
            max={progress?.totalBytes ?? undefined}
            value={progress?.totalBytes ? progress.loadedBytes : undefined}
          />
          <span className="muted small">
            {formatBytes(progress?.loadedBytes ?? 0)}
            {progress?.totalBytes ? ` / ${formatBytes(progress.totalBytes)}` : ''}
          </span>
        </div>
      )}
      {status === 'error' && <p className="muted">No model is loaded.</p>}
      {model && cfg && (
        <dl className="facts">
          <dt>Name</dt>
          <dd data-testid="model-name">{model.name}</dd>
          <dt>Layers</dt>
          <dd>{cfg.numLayers}</dd>
          <dt>Hidden size d</dt>
          <dd>{cfg.hiddenSize}</dd>
          <dt>Heads</dt>
          <dd>{cfg.numHeads}</dd>
          <dt>Vocabulary</dt>
          <dd>{cfg.vocabSize}</dd>
          <dt>Parameters</dt>
          <dd>{formatCount(model.params)}</dd>
          <dt>Tokenizer</dt>
          <dd>{model.tokenizer}</dd>
          <dt>On the GPU</dt>
          <dd>{formatBytes(model.gpuBytes)}</dd>
        </dl>
      )}
    </section>
  );
}
