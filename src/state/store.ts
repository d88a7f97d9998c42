// The app's state: GPU init, the loaded model, the run settings (what becomes a RunSpec), the run in flight
// and its report, what is selected in the charts, and display preferences. Pure state and actions; the
// effects (talking to the worker) live in controller.ts. Settings survive a worker restart (device lost); what
// they are and how they are kept valid is settings.ts.
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { FusedKernelId } from '../engine/fused-kernels';
import type { FaultId } from '../run/faults';
import type { RunSummary } from '../run/history';
import type { Sharer } from '../run/permalink';
import {
  type CustomKernelSpec,
  defaultRunSpec,
  type Metric,
  type ModelRef,
  type RunSpec,
} from '../run/runspec';
import { scenarioById } from '../run/scenarios';
import type {
  AdapterSummary,
  ComparePartial,
  CompareProgress,
  GpuFeatures,
  LoadedModel,
  PoolStats,
  Report,
  WorkerError,
} from '../worker/api';
import { emptyRun, type RunState, withPartial } from './run-state';
import {
  defaultSettings,
  extraFaultBlocker,
  faultBlocker,
  type RunSettings,
  sanitize,
  settingsOf,
} from './settings';

export type { PendingPart, RunState, RunStatus, StreamedPath, TextSegments, TokenStream } from './run-state';

export const EMBEDDED_MODEL_ID = 'neox-kjv-bytes';
export type InitStatus = 'idle' | 'pending' | 'ready' | 'no-webgpu' | 'lost' | 'error';
export type ModelStatus = 'idle' | 'loading' | 'ready' | 'error';
export type Theme = 'system' | 'light' | 'dark';

export interface LoadProgressState {
  file: string;
  loadedBytes: number;
  totalBytes: number | null;
}

/** Where the loaded model came from (files read from disk are kept by the controller, not here). */
export type ModelSource =
  | { kind: 'embedded'; id: string; url: string }
  | { kind: 'url'; url: string }
  | { kind: 'files'; name: string };

/** A run opened from a permalink ('#r1=…') or a scenario link ('#s=…'). */
export interface LinkedRun {
  /** The link's RunSpec (validated), which the settings were restored from. */
  spec: RunSpec;
  origin: 'link' | 'scenario';
  /** What the sharer saw (their adapter and per-layer summary), when the link carries it. */
  sharer: Sharer | null;
  /** The link asked to run at once and autorunAllowed() agreed; cleared when the run starts. */
  autorunPending: boolean;
}

/** A model a link or a stored run names that is not loaded and not in the cache: the viewer is asked. */
export interface ModelNeed {
  ref: Exclude<ModelRef, { kind: 'embedded' }>;
  /** Where the request comes from (for the words shown). */
  from: 'link' | 'history';
}

export interface ScenarioView {
  id: string;
  /** 1-based variant number, or null for the scenario's main run. */
  variant: number | null;
  /** 0-based index of the step shown. */
  step: number;
}

export interface HistoryState {
  status: 'loading' | 'ready' | 'unavailable';
  /** Newest first. */
  runs: RunSummary[];
  /** Why the history is unavailable (no IndexedDB, private mode), or null. */
  message: string | null;
  /** A note about the last history action (a run that is gone, a report that was not kept), or null. */
  notice: string | null;
}

export interface Prefs {
  theme: Theme;
  largeType: boolean;
}

export interface AppState {
  initStatus: InitStatus;
  adapter: AdapterSummary | null;
  features: GpuFeatures | null;
  modelStatus: ModelStatus;
  modelProgress: LoadProgressState | null;
  model: LoadedModel | null;
  modelSource: ModelSource | null;
  settings: RunSettings;
  run: RunState;
  /** The layer whose drill-down is open, and the tap whose histogram is shown. */
  selectedLayer: number | null;
  selectedTap: string | null;
  /** The metric the charts show (set to the report's metric when a report arrives). */
  viewMetric: Metric;
  pool: PoolStats | null;
  prefs: Prefs;
  /** The one error shown to the user (null when none). */
  error: WorkerError | null;
  /** The run a link opened, while its settings are the ones shown. */
  linked: LinkedRun | null;
  /** Why the last link could not be opened (one sentence), or null. */
  linkError: string | null;
  /** A model the viewer is asked for (file picker or consent to download), or null. */
  modelNeed: ModelNeed | null;
  history: HistoryState;
  /** The report shown is a stored one (re-opened from the history, not re-run). */
  storedRun: { id: string; createdAt: string } | null;
  /** The classroom scenario shown (opened by '#s=<id>'), or null. */
  scenario: ScenarioView | null;
  /** Presenter mode: the scenario's steps in large type, one at a time. */
  presenter: boolean;
  /**
   * A custom kernel a link or a stored run carries, shown as a diff and waiting for the viewer's consent: Run
   * is disabled until they agree (it then becomes settings.custom) or set it aside.
   */
  customPending: CustomKernelSpec | null;
  /**
   * The workspace mode shown (an id of the page's mode registry, src/ui/modes.ts: 'explore', 'classroom',
   * 'kernel', …). The state does not know the modes; the page falls back to its first mode for an unknown id.
   */
  mode: string;
  /** What Run waits for while it runs (a custom kernel's isolated test), in words; null when nothing. */
  waitingFor: string | null;
}

export interface AppActions {
  setSettings(patch: Partial<RunSettings>): void;
  /** Switches one fused kernel on or off. */
  toggleFused(id: FusedKernelId, on: boolean): void;
  initStarted(): void;
  initSucceeded(adapter: AdapterSummary, features: GpuFeatures): void;
  initFailed(error: WorkerError): void;
  deviceLost(error: WorkerError): void;
  modelLoadStarted(source: ModelSource): void;
  setModelProgress(p: LoadProgressState): void;
  modelLoaded(info: LoadedModel): void;
  modelFailed(error: WorkerError): void;
  runStarted(spec: RunSpec, now: number): void;
  runProgress(p: CompareProgress): void;
  /** A piece of the report while the run is in flight (shown at once). */
  runPartial(p: ComparePartial): void;
  runFinished(report: Report, now: number): void;
  setSegments(segments: RunState['segments']): void;
  runFailed(error: WorkerError, now: number): void;
  selectLayer(layer: number | null): void;
  selectTap(tap: string | null): void;
  setViewMetric(metric: Metric): void;
  setPool(pool: PoolStats | null): void;
  setPrefs(patch: Partial<Prefs>): void;
  clearError(): void;
  /**
   * Opens a run from a link (or a stored run): every setting from its spec, the link's context, the
   * scenario (when it is one). The report shown (if any, and no run is in flight) is cleared: it answered
   * other settings.
   */
  openRun(spec: RunSpec, linked: LinkedRun | null, scenario: ScenarioView | null): void;
  setLinkError(message: string | null): void;
  setModelNeed(need: ModelNeed | null): void;
  setHistory(patch: Partial<HistoryState>): void;
  /** Shows a stored report without running it, and restores its settings. */
  showStoredRun(stored: { id: string; createdAt: string }, spec: RunSpec, report: Report): void;
  setStoredRun(stored: { id: string; createdAt: string } | null): void;
  /** Moves the scenario's step by delta (clamped to its steps). */
  stepScenario(delta: number): void;
  setScenarioStep(step: number): void;
  setPresenter(on: boolean): void;
  /** Drops one of the extra faults a link planted. */
  removeExtraFault(id: FaultId): void;
  setMode(mode: string): void;
  setWaitingFor(what: string | null): void;
}

export type AppStore = StoreApi<AppState & AppActions>;

export function initialState(): AppState {
  return {
    initStatus: 'idle',
    adapter: null,
    features: null,
    modelStatus: 'idle',
    modelProgress: null,
    model: null,
    modelSource: null,
    settings: defaultSettings(),
    run: emptyRun,
    selectedLayer: null,
    selectedTap: null,
    viewMetric: defaultRunSpec().metric,
    pool: null,
    prefs: { theme: 'system', largeType: false },
    error: null,
    linked: null,
    linkError: null,
    modelNeed: null,
    history: { status: 'loading', runs: [], message: null, notice: null },
    storedRun: null,
    scenario: null,
    presenter: false,
    customPending: null,
    mode: 'explore',
    waitingFor: null,
  };
}

/** Whether Run may start now. */
export function canRun(s: AppState): boolean {
  return (
    s.initStatus === 'ready' &&
    s.modelStatus === 'ready' &&
    s.run.status !== 'running' &&
    s.settings.prompt.trim().length > 0 &&
    s.customPending === null &&
    s.waitingFor === null &&
    faultBlocker(s.settings) === null &&
    extraFaultBlocker(s.settings) === null
  );
}

function clampStep(scenario: ScenarioView, step: number): ScenarioView {
  const n = scenarioById(scenario.id)?.steps.length ?? 1;
  const next = Math.min(n - 1, Math.max(0, Math.round(step)));
  return next === scenario.step ? scenario : { ...scenario, step: next };
}

export function createAppStore(overrides: Partial<AppState> = {}): AppStore {
  return createStore<AppState & AppActions>()((set) => ({
    ...initialState(),
    ...overrides,
    // A refused run's message ('input') says what was wrong with the settings: it goes when they change.
    setSettings: (patch) =>
      set((s) => ({
        settings: sanitize(s.settings, patch),
        ...(s.error?.kind === 'input' ? { error: null } : {}),
      })),
    toggleFused: (id, on) =>
      set((s) => ({
        settings: sanitize(s.settings, {
          fused: on ? [...s.settings.fused, id] : s.settings.fused.filter((k) => k !== id),
        }),
      })),
    initStarted: () => set({ initStatus: 'pending', adapter: null, features: null, error: null }),
    initSucceeded: (adapter, features) => set({ initStatus: 'ready', adapter, features }),
    initFailed: (error) => set({ initStatus: error.kind === 'no-webgpu' ? 'no-webgpu' : 'error', error }),
    deviceLost: (error) =>
      set((s) => ({
        initStatus: 'lost',
        error,
        modelStatus: s.modelStatus === 'ready' ? 'idle' : s.modelStatus,
        pool: null,
        run: s.run.status === 'running' ? { ...s.run, status: 'error', progress: null } : s.run,
      })),
    modelLoadStarted: (source) =>
      set({
        modelStatus: 'loading',
        model: null,
        modelSource: source,
        modelProgress: { file: '', loadedBytes: 0, totalBytes: null },
        error: null,
        linkError: null,
      }),
    setModelProgress: (p) => set((s) => (s.modelStatus === 'loading' ? { modelProgress: { ...p } } : {})),
    modelLoaded: (model) =>
      set((s) => ({
        modelStatus: 'ready',
        model,
        modelProgress: null,
        // A model without a tokenizer takes token ids only.
        settings: model.tokenizer === 'token ids only' ? { ...s.settings, promptMode: 'ids' } : s.settings,
      })),
    modelFailed: (error) => set({ modelStatus: 'error', model: null, modelProgress: null, error }),
    runStarted: (spec, now) =>
      set((s) => ({
        run: { ...emptyRun, status: 'running', spec, startedAt: now },
        selectedLayer: null,
        selectedTap: null,
        error: null,
        linkError: null,
        storedRun: null,
        linked: s.linked?.autorunPending ? { ...s.linked, autorunPending: false } : s.linked,
      })),
    runProgress: (p) =>
      set((s) => (s.run.status === 'running' ? { run: { ...s.run, progress: { ...p } } } : {})),
    runPartial: (p) => set((s) => (s.run.status === 'running' ? { run: withPartial(s.run, p) } : {})),
    runFinished: (report, now) =>
      set((s) =>
        s.run.status === 'running'
          ? {
              run: {
                ...s.run,
                status: 'done',
                progress: null,
                report,
                pending: [],
                stream: null,
                elapsedMs: s.run.startedAt === null ? null : now - s.run.startedAt,
              },
              viewMetric: report.metric,
            }
          : {},
      ),
    setSegments: (segments) => set((s) => ({ run: { ...s.run, segments } })),
    runFailed: (error, now) =>
      set((s) => {
        if (s.run.status !== 'running') return {};
        const elapsedMs = s.run.startedAt === null ? null : now - s.run.startedAt;
        return error.kind === 'cancelled'
          ? { run: { ...s.run, status: 'cancelled', progress: null, elapsedMs } }
          : { run: { ...s.run, status: 'error', progress: null, elapsedMs }, error };
      }),
    selectLayer: (layer) =>
      set((s) => (s.selectedLayer === layer ? {} : { selectedLayer: layer, selectedTap: null })),
    selectTap: (selectedTap) => set({ selectedTap }),
    setViewMetric: (viewMetric) => set({ viewMetric }),
    setPool: (pool) => set({ pool }),
    setPrefs: (patch) => set((s) => ({ prefs: { ...s.prefs, ...patch } })),
    clearError: () => set({ error: null }),
    openRun: (spec, linked, scenario) =>
      set((s) => ({
        settings: sanitize(s.settings, settingsOf(spec)),
        // Never an old answer under a new question: the report of other settings goes.
        ...(s.run.status === 'running' ? {} : { run: emptyRun, selectedLayer: null, selectedTap: null }),
        linked,
        linkError: null,
        scenario,
        presenter: scenario ? s.presenter : false,
        modelNeed: null,
        storedRun: null,
        // GPU code that came with the run waits for the viewer's consent (settingsOf leaves it out).
        customPending: spec.custom ? { ...spec.custom } : null,
        // An error about what was open before goes; one about the GPU (with its restart button) stays.
        error: s.initStatus === 'lost' || s.initStatus === 'error' ? s.error : null,
      })),
    // One answer to what was done last: a bad link replaces an error about something older (one about the GPU,
    // with its restart button, stays), and a run or a load started since replaces the link's error.
    setLinkError: (linkError) =>
      set((s) => ({
        linkError,
        ...(linkError && s.initStatus !== 'lost' && s.initStatus !== 'error' ? { error: null } : {}),
      })),
    setModelNeed: (modelNeed) => set({ modelNeed }),
    setHistory: (patch) => set((s) => ({ history: { ...s.history, ...patch } })),
    showStoredRun: (stored, spec, report) =>
      set((s) =>
        s.run.status === 'running'
          ? {}
          : {
              settings: sanitize(s.settings, settingsOf(spec)),
              run: { ...emptyRun, status: 'done', spec, report },
              storedRun: { ...stored },
              viewMetric: report.metric,
              selectedLayer: null,
              selectedTap: null,
              linked: null,
              linkError: null,
              scenario: null,
              presenter: false,
              modelNeed: null,
              error: null,
              customPending: spec.custom ? { ...spec.custom } : null,
            },
      ),
    setStoredRun: (storedRun) => set({ storedRun }),
    stepScenario: (delta) =>
      set((s) => (s.scenario ? { scenario: clampStep(s.scenario, s.scenario.step + delta) } : {})),
    setScenarioStep: (step) => set((s) => (s.scenario ? { scenario: clampStep(s.scenario, step) } : {})),
    setPresenter: (on) => set((s) => ({ presenter: on && s.scenario !== null })),
    removeExtraFault: (id) =>
      set((s) => ({
        settings: { ...s.settings, extraFaults: s.settings.extraFaults.filter((f) => f.id !== id) },
      })),
    setMode: (mode) => set({ mode }),
    setWaitingFor: (waitingFor) => set({ waitingFor }),
  }));
}
