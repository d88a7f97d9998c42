// The one error message, shown beside the control it is about: a model that cannot be loaded beside the
// model picker (or beside the files a link asks for), a refused run beside the Run button that was pressed,
// a lost GPU at the top of the main view (with its restart). One place at a time; it goes when it no longer
// holds (a new load, a run that starts, changed settings).
import { useEffect, useRef } from 'react';
import { useStore } from 'zustand';
import type { Controller } from '../state/controller';
import type { AppState, AppStore } from '../state/store';
import type { WorkerError } from '../worker/api';

export type ErrorPlace = 'top' | 'model' | 'model-need' | 'run' | 'run-linked';

const ERROR_TITLES: Record<WorkerError['kind'], string> = {
  'no-webgpu': 'WebGPU is not available',
  'device-lost': 'The GPU device was lost',
  model: 'The model could not be loaded',
  'model-mismatch': 'The model does not match the run',
  input: 'This run cannot start',
  cancelled: 'Cancelled',
  internal: 'Something went wrong',
};

/** Where the error of the state is shown (null: none). */
export function errorPlace(s: AppState): ErrorPlace | null {
  const e = s.error;
  if (!e) return null;
  if (s.initStatus === 'lost' || s.initStatus === 'error') return 'top';
  switch (e.kind) {
    case 'model':
    case 'model-mismatch':
      return s.modelNeed ? 'model-need' : 'model';
    case 'input':
    case 'cancelled':
      // The linked run's own button is in view when a permalink's banner or the scenario stage is shown.
      return s.linked && (s.linked.origin === 'link' || s.mode === 'classroom') ? 'run-linked' : 'run';
    default:
      return 'top';
  }
}

export function ErrorAlert({
  store,
  controller,
  place,
}: {
  store: AppStore;
  controller: Controller;
  place: ErrorPlace;
}) {
  const error = useStore(store, (s) => (errorPlace(s) === place ? s.error : null));
  const initStatus = useStore(store, (s) => s.initStatus);
  const customInUse = useStore(store, (s) => s.settings.custom !== null);
  const clearError = useStore(store, (s) => s.clearError);
  const ref = useRef<HTMLDivElement>(null);
  // A new message is brought into view where it is (the rail scrolls on its own).
  useEffect(() => {
    if (error) ref.current?.scrollIntoView({ block: 'nearest', behavior: 'instant' as ScrollBehavior });
  }, [error]);
  if (!error) return null;
  const lost = initStatus === 'lost';
  return (
    <div
      ref={ref}
      className={`alert${place === 'top' ? '' : ' beside'}`}
      role="alert"
      data-testid="error"
      data-kind={error.kind}
      data-place={place}
    >
      <div>
        <strong>{ERROR_TITLES[error.kind]}</strong>
        <p>{error.message}</p>
        {lost && (
          <p>
            This happens when the GPU driver resets, the browser reclaims the GPU or a kernel never finishes.
            Your settings are kept; restarting creates a new device and loads the model again.
          </p>
        )}
        {lost && customInUse && (
          <p data-testid="lost-custom-kernel">
            The run used your custom kernel: a kernel that loops too long or goes wrong on the GPU can lose
            the device. Its source is kept in the editor.
          </p>
        )}
      </div>
      {lost || initStatus === 'error' ? (
        <button type="button" className="primary" data-testid="retry" onClick={() => void controller.retry()}>
          Restart the GPU
        </button>
      ) : (
        <button type="button" className="ghost" onClick={clearError} aria-label="Dismiss the error">
          ×
        </button>
      )}
    </div>
  );
}
