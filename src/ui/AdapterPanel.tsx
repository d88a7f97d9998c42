// What runs here: the WebGPU adapter (vendor, architecture, description, features, a few limits).
import { useStore } from 'zustand';
import type { AppStore } from '../state/store';
import { formatBytes } from './format';

const LIMITS_SHOWN: [string, string][] = [
  ['maxStorageBufferBindingSize', 'Storage binding'],
  ['maxBufferSize', 'Buffer size'],
  ['maxComputeWorkgroupStorageSize', 'Workgroup storage'],
  ['maxComputeInvocationsPerWorkgroup', 'Invocations / workgroup'],
];

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
          {status === 'error'
            ? 'No GPU device could be started.'
            : status === 'lost'
              ? 'The GPU device was lost.'
              : 'Looking for a WebGPU adapter…'}
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
