// The first page: what GPU runs here, which model is loaded, and a prompt to continue.
import { useStore } from 'zustand';
import type { Controller } from '../state/controller';
import type { AppStore } from '../state/store';
import type { WorkerError } from '../worker/api';
import { AdapterPanel, ModelPanel } from './AdapterPanel';
import { GeneratePanel } from './GeneratePanel';
import { NoWebGpu } from './NoWebGpu';

export interface AppProps {
  store: AppStore;
  controller: Controller;
}

const ERROR_TITLES: Record<WorkerError['kind'], string> = {
  'no-webgpu': 'WebGPU is not available',
  'device-lost': 'The GPU device was lost — reload the page to start again',
  model: 'The model could not be loaded',
  input: 'This request cannot run',
  cancelled: 'Cancelled',
  internal: 'Something went wrong',
};

export function App({ store, controller }: AppProps) {
  const initStatus = useStore(store, (s) => s.initStatus);
  const error = useStore(store, (s) => s.error);
  const clearError = useStore(store, (s) => s.clearError);

  return (
    <>
      <header className="site-header">
        <h1>Divergence explorer</h1>
        <p className="tagline">A GPT-NeoX model running on your GPU through WebGPU.</p>
      </header>
      <main className="page">
        {initStatus === 'no-webgpu' ? (
          <NoWebGpu detail={error?.message ?? null} />
        ) : (
          <>
            {error && (
              <div className="alert" role="alert" data-testid="error" data-kind={error.kind}>
                <div>
                  <strong>{ERROR_TITLES[error.kind]}</strong>
                  <p>{error.message}</p>
                </div>
                {error.kind !== 'device-lost' && (
                  <button type="button" className="ghost" onClick={clearError} aria-label="Dismiss the error">
                    ×
                  </button>
                )}
              </div>
            )}
            <div className="panels">
              <AdapterPanel store={store} />
              <ModelPanel store={store} />
            </div>
            <GeneratePanel store={store} controller={controller} />
          </>
        )}
      </main>
    </>
  );
}
