// The explorer: settings on the left (run, model, GPU), the report on the right; a header with the GPU
// memory in use, the theme and a large-type switch. Device loss gets a message and a one-click restart that
// keeps every setting.
import { useEffect } from 'react';
import { useStore } from 'zustand';
import type { Controller } from '../state/controller';
import type { AppStore } from '../state/store';
import type { WorkerError } from '../worker/api';
import { AdapterPanel } from './AdapterPanel';
import { formatBytes } from './format';
import { GlossaryPanel } from './Glossary';
import { HistoryPanel } from './HistoryPanel';
import { KernelConsent } from './kernel-editor/KernelConsent';
import { KernelEditor } from './kernel-editor/KernelEditor';
import { KernelVerdict } from './kernel-editor/KernelVerdict';
import { LinkBanner, LinkErrorAlert, ModelNeedCard } from './LinkPanels';
import { ModelPanel } from './ModelPanel';
import { NoWebGpu } from './NoWebGpu';
import { Presenter } from './Presenter';
import { Results } from './Results';
import { RunPanel } from './RunPanel';
import { ScenarioPicker, ScenarioStage } from './Scenarios';
import { SharePanel } from './SharePanel';

export interface AppProps {
  store: AppStore;
  controller: Controller;
  /** Shows test hooks (a "lose the GPU device" button). */
  debug?: boolean;
}

const ERROR_TITLES: Record<WorkerError['kind'], string> = {
  'no-webgpu': 'WebGPU is not available',
  'device-lost': 'The GPU device was lost',
  model: 'The model could not be loaded',
  'model-mismatch': 'The model does not match the run',
  input: 'This run cannot start',
  cancelled: 'Cancelled',
  internal: 'Something went wrong',
};

function GpuMemory({ store }: { store: AppStore }) {
  const pool = useStore(store, (s) => s.pool);
  const model = useStore(store, (s) => s.model);
  if (!pool) return null;
  return (
    <p
      className="gpu-memory small"
      data-testid="gpu-memory"
      data-bytes-in-use={pool.bytesInUse}
      data-bytes-live={pool.bytesLive}
      title="Buffers of the engine's pool: handed out to a running pass (in use) and kept for reuse (pooled). Model weights are counted apart."
    >
      GPU memory in use: <strong>{formatBytes(pool.bytesInUse)}</strong>
      <span className="muted">
        {' '}
        · pooled {formatBytes(pool.bytesLive)}
        {model ? ` · weights ${formatBytes(model.gpuBytes)}` : ''}
      </span>
    </p>
  );
}

function Prefs({ store }: { store: AppStore }) {
  const prefs = useStore(store, (s) => s.prefs);
  const setPrefs = useStore(store, (s) => s.setPrefs);
  return (
    <div className="prefs">
      <label className="inline-label">
        Theme{' '}
        <select
          value={prefs.theme}
          data-testid="theme"
          onChange={(e) => setPrefs({ theme: e.target.value as typeof prefs.theme })}
        >
          <option value="system">system</option>
          <option value="light">light</option>
          <option value="dark">dark</option>
        </select>
      </label>
      <button
        type="button"
        className="small-btn"
        aria-pressed={prefs.largeType}
        data-testid="large-type"
        onClick={() => setPrefs({ largeType: !prefs.largeType })}
      >
        Large type
      </button>
    </div>
  );
}

export function App({ store, controller, debug = false }: AppProps) {
  const initStatus = useStore(store, (s) => s.initStatus);
  const error = useStore(store, (s) => s.error);
  const clearError = useStore(store, (s) => s.clearError);
  const prefs = useStore(store, (s) => s.prefs);
  const customInUse = useStore(store, (s) => s.settings.custom !== null);

  useEffect(() => {
    const root = document.documentElement;
    if (prefs.theme === 'system') delete root.dataset.theme;
    else root.dataset.theme = prefs.theme;
    if (prefs.largeType) root.dataset.large = 'yes';
    else delete root.dataset.large;
  }, [prefs]);

  const lost = initStatus === 'lost';
  return (
    <>
      <header className="site-header">
        <div>
          <h1>Divergence explorer</h1>
          <p className="tagline">
            Where does a fused GPU kernel part from the plain one — and is it more than rounding?
          </p>
        </div>
        <div className="header-tools">
          <GpuMemory store={store} />
          <Prefs store={store} />
        </div>
      </header>
      <main className="page">
        {initStatus === 'no-webgpu' ? (
          <NoWebGpu detail={error?.message ?? null} store={store} />
        ) : (
          <>
            {error && (
              <div className="alert" role="alert" data-testid="error" data-kind={error.kind}>
                <div>
                  <strong>{ERROR_TITLES[error.kind]}</strong>
                  <p>{error.message}</p>
                  {lost && (
                    <p>
                      This happens when the GPU driver resets, the browser reclaims the GPU or a kernel never
                      finishes. Your settings are kept; restarting creates a new device and loads the model
                      again.
                    </p>
                  )}
                  {lost && customInUse && (
                    <p data-testid="lost-custom-kernel">
                      The run used your custom kernel: a kernel that loops too long or goes wrong on the GPU
                      can lose the device. Its source is kept in the editor.
                    </p>
                  )}
                </div>
                {lost || initStatus === 'error' ? (
                  <button
                    type="button"
                    className="primary"
                    data-testid="retry"
                    onClick={() => void controller.retry()}
                  >
                    Restart the GPU
                  </button>
                ) : (
                  <button type="button" className="ghost" onClick={clearError} aria-label="Dismiss the error">
                    ×
                  </button>
                )}
              </div>
            )}
            <LinkErrorAlert store={store} />
            <ModelNeedCard store={store} controller={controller} />
            <LinkBanner store={store} controller={controller} />
            <KernelConsent store={store} controller={controller} />
            <ScenarioStage store={store} controller={controller} />
            <KernelEditor store={store} controller={controller} />
            <KernelVerdict store={store} controller={controller} />
            <div className="layout">
              <div className="side">
                <RunPanel store={store} controller={controller} />
                <SharePanel store={store} />
                <ScenarioPicker store={store} controller={controller} />
                <HistoryPanel store={store} controller={controller} />
                <ModelPanel store={store} controller={controller} />
                <AdapterPanel store={store} />
                <GlossaryPanel />
              </div>
              <Results store={store} />
            </div>
            <Presenter store={store} controller={controller} />
          </>
        )}
      </main>
      {debug && initStatus !== 'no-webgpu' && (
        <footer className="debug">
          <button
            type="button"
            className="small-btn"
            data-testid="lose-device"
            onClick={() => controller.loseDevice()}
          >
            Test: lose the GPU device
          </button>
        </footer>
      )}
    </>
  );
}
