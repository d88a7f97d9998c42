// The explorer as a workspace: the modes (modes.tsx) picked at the top, the current mode's settings in a side
// rail (with the model, the GPU and the glossary), its results in the main view; a header with the GPU memory
// in use, the theme and a large-type switch, and a skip link to the results. A link, a scenario or a custom
// kernel that opens switches to its mode and is brought into view with the keyboard on it. Device loss gets a
// message and a one-click restart that keeps every setting.
import { useEffect, useId } from 'react';
import { useStore } from 'zustand';
import type { Controller } from '../state/controller';
import type { AppState, AppStore } from '../state/store';
import { AdapterPanel } from './AdapterPanel';
import { ErrorAlert } from './ErrorAlert';
import { formatBytes } from './format';
import { GlossaryPanel } from './Glossary';
import { LinkBanner, LinkErrorAlert, ModelNeedCard } from './LinkPanels';
import { ModelPanel } from './ModelPanel';
import { MODES, modeById, modeOpened, reveal } from './modes';
import { NoWebGpu } from './NoWebGpu';
import { Presenter } from './Presenter';

export interface AppProps {
  store: AppStore;
  controller: Controller;
  /** Shows test hooks (a "lose the GPU device" button). */
  debug?: boolean;
}

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

/** The mode tabs: one button each (aria-pressed), the current mode's blurb under them. */
function ModeTabs({ store }: { store: AppStore }) {
  const current = modeById(useStore(store, (s) => s.mode));
  const setMode = useStore(store, (s) => s.setMode);
  const ids = useId();
  return (
    <nav className="mode-bar" aria-label="Modes">
      <div className="mode-tabs">
        {MODES.map((m) => (
          <button
            key={m.id}
            type="button"
            className="mode-tab"
            data-testid={`mode-${m.id}`}
            aria-pressed={m.id === current.id}
            aria-describedby={m.id === current.id ? `${ids}-blurb` : undefined}
            onClick={() => {
              setMode(m.id);
              // The new mode's settings start at the top of the rail: a rail scrolled down to the model panel
              // would hide them. Only the rail's own scroll moves: scrolling its first card into view moved the
              // page too (a card taller than the window is aligned to the window's top), taking the tabs off it.
              requestAnimationFrame(() => {
                const rail = document.querySelector<HTMLElement>('[data-testid="rail"]');
                if (rail) rail.scrollTop = 0;
              });
            }}
          >
            {m.label}
          </button>
        ))}
      </div>
      <p id={`${ids}-blurb`} className="mode-blurb muted small">
        {current.blurb}
      </p>
    </nav>
  );
}

/** Switches to the mode of what a link, a scenario or a stored run opened, and brings it into view. */
function useModeFollows(store: AppStore): void {
  useEffect(() => {
    const follow = (next: AppState, prev: AppState) => {
      const hit = modeOpened(next, prev);
      if (!hit) return;
      if (next.mode !== hit.mode.id) store.getState().setMode(hit.mode.id);
      reveal(hit.target);
    };
    // What a link opened before the page was first drawn (the address the page was opened with).
    const now = store.getState();
    follow(now, { ...now, linked: null, scenario: null, customPending: null, storedRun: null });
    return store.subscribe(follow);
  }, [store]);
}

export function App({ store, controller, debug = false }: AppProps) {
  const initStatus = useStore(store, (s) => s.initStatus);
  const error = useStore(store, (s) => s.error);
  const prefs = useStore(store, (s) => s.prefs);
  const mode = modeById(useStore(store, (s) => s.mode));
  useModeFollows(store);

  useEffect(() => {
    const root = document.documentElement;
    if (prefs.theme === 'system') delete root.dataset.theme;
    else root.dataset.theme = prefs.theme;
    if (prefs.largeType) root.dataset.large = 'yes';
    else delete root.dataset.large;
  }, [prefs]);

  const { Rail, Main } = mode;
  return (
    <>
      {/* A button, not an anchor to '#main-view': the fragment is the page's link (main.tsx opens it). */}
      <button type="button" className="skip-link" data-testid="skip-link" onClick={skipToResults}>
        Skip to the results
      </button>
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
      {initStatus === 'no-webgpu' ? (
        <main className="page">
          <NoWebGpu detail={error?.message ?? null} store={store} />
        </main>
      ) : (
        <div className="page">
          <ModeTabs store={store} />
          <div className="workspace" data-testid="workspace" data-mode={mode.id}>
            <aside className="rail" aria-label="Settings" data-testid="rail">
              <Rail store={store} controller={controller} />
              <ModelPanel store={store} controller={controller} />
              <AdapterPanel store={store} />
              <GlossaryPanel />
            </aside>
            <main className="main-view" id="main-view" tabIndex={-1} data-testid="main-view">
              <ErrorAlert store={store} controller={controller} place="top" />
              <LinkErrorAlert store={store} />
              <ModelNeedCard store={store} controller={controller} />
              <LinkBanner store={store} controller={controller} />
              <Main store={store} controller={controller} />
            </main>
          </div>
          <Presenter store={store} controller={controller} />
        </div>
      )}
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

/** The skip link: the keyboard lands on the report (or on the main view when there is none yet). */
function skipToResults(): void {
  const target = document.querySelector('[data-testid="results"]') ? '[data-testid="results"]' : '#main-view';
  reveal(target);
}
