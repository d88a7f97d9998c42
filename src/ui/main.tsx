// Entry point: one store, one controller (which owns the engine worker and can replace it after a device
// loss), the embedded model resolved against the document's base URL so the site works under any path.
// Display preferences (theme, large type) are remembered in localStorage.
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { isRunsLink } from '../run/runs-link';
import { createController } from '../state/controller';
import { watchdogParam } from '../state/controller/watchdog';
import { useRunsImport } from '../state/runs-import';
import { createAppStore, EMBEDDED_MODEL_ID, type Prefs } from '../state/store';
import { createEngineClient } from '../worker/client';
import { App } from './App';
import { MODES, modeById } from './modes';
import { modeOfSearch, showModeInAddressBar } from './nav';
import './styles.css';

export const EMBEDDED_MODEL_PATH = `models/${EMBEDDED_MODEL_ID}/`;
const PREFS_KEY = 'divergence-explorer.prefs';

function loadPrefs(): Prefs | null {
  try {
    const v: unknown = JSON.parse(localStorage.getItem(PREFS_KEY) ?? 'null');
    if (typeof v !== 'object' || v === null) return null;
    const r = v as Record<string, unknown>;
    const theme = r.theme === 'light' || r.theme === 'dark' ? r.theme : 'system';
    return { theme, largeType: r.largeType === true };
  } catch {
    return null;
  }
}

const saved = loadPrefs();
const store = createAppStore(saved ? { prefs: saved } : {});
store.subscribe((s, prev) => {
  if (s.prefs === prev.prefs) return;
  try {
    localStorage.setItem(PREFS_KEY, JSON.stringify(s.prefs));
  } catch {
    // Storage may be off (private mode): preferences then last for this visit.
  }
});
const oracleParam = new URLSearchParams(location.search).get('oracle');
const controller = createController(store, createEngineClient, {
  embedded: { id: EMBEDDED_MODEL_ID, url: new URL(EMBEDDED_MODEL_PATH, document.baseURI).href },
  // ?oracle=gpu or ?oracle=cpu forces the comparison's oracle; anything else leaves the engine's choice.
  oracle: oracleParam === 'gpu' || oracleParam === 'cpu' ? oracleParam : 'auto',
  // ?watchdog=SECONDS: how long custom GPU code may give no sign of life before it counts as a hang.
  watchdogMs: watchdogParam(location.search) ?? undefined,
});
void controller.start();
// The mode is kept in the address (?mode=…), so a reload or a bookmark opens the same workspace; a link opened
// below picks its own.
const modeParam = modeOfSearch(location.search);
if (modeParam) store.getState().setMode(modeById(modeParam).id);
store.subscribe((s, prev) => {
  if (s.mode !== prev.mode) showModeInAddressBar(modeById(s.mode).id, MODES[0].id);
});
// A link in the fragment ('#r1=…' permalink, '#s=…' scenario): opened now, and whenever it changes.
// '#u1=…' (an analysis of runs from elsewhere) opens the "your runs" mode, which asks for the files it names.
const openHash = (hash: string) => {
  if (!isRunsLink(hash)) return void controller.openLink(hash);
  useRunsImport.getState().openLink(hash);
  store.getState().setMode('runs');
};
openHash(location.hash);
window.addEventListener('hashchange', () => openHash(location.hash));

const debug = new URLSearchParams(location.search).has('debug');
const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');
createRoot(root).render(
  <StrictMode>
    <App store={store} controller={controller} debug={debug} />
  </StrictMode>,
);
