// The app's state: GPU init, the loaded model, the run settings (what becomes a RunSpec), the run in flight
// and its report, what is selected in the charts, and display preferences. Pure state and actions; the
// effects (talking to the worker) live in controller.ts. Settings survive a worker restart (device lost).
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { FusedKernelId } from '../engine/fused-kernels';
import { FUSED_KERNELS } from '../engine/fused-kernels';
import type { Precision } from '../kernels/precision';
import { type FaultId, faultInfo } from '../run/faults';
import { defaultRunSpec, LIMITS, type Metric, type RunSpec } from '../run/runspec';
import type {
  AdapterSummary,
  CompareProgress,
  GpuFeatures,
  LoadedModel,
  PoolStats,
  Report,
  WorkerError,
} from '../worker/api';

export const EMBEDDED_MODEL_ID = 'neox-kjv-bytes';
export const MAX_GENERATE = LIMITS.generate;
export const K_RANGE = LIMITS.k;

export type InitStatus = 'idle' | 'pending' | 'ready' | 'no-webgpu' | 'lost' | 'error';
export type ModelStatus = 'idle' | 'loading' | 'ready' | 'error';
export type RunStatus = 'idle' | 'running' | 'done' | 'cancelled' | 'error';
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

/** Everything the user sets before pressing Run; turned into a RunSpec by buildSpec (spec.ts). */
export interface RunSettings {
  prompt: string;
  /** 'text' is encoded by the model's tokenizer; 'ids' is a list of token ids such as "3, 14, 15". */
  promptMode: 'text' | 'ids';
  generate: number;
  precision: Precision;
  fused: FusedKernelId[];
  fault: FaultId | null;
  /** First faulty layer; null = drawn from the seed. */
  faultLayer: number | null;
  seed: number;
  k: number;
  metric: Metric;
}

/** The generated text of one path cut around the first differing token (null when they never differ). */
export interface TextSegments {
  before: string;
  at: string;
  after: string;
}

export interface RunState {
  status: RunStatus;
  /** The RunSpec of the run in flight or of the report shown. */
  spec: RunSpec | null;
  progress: CompareProgress | null;
  startedAt: number | null;
  elapsedMs: number | null;
  report: Report | null;
  /** Reference and fused continuations cut at the first differing token (decoded by the worker). */
  segments: { reference: TextSegments; fused: TextSegments } | null;
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
  runFinished(report: Report, now: number): void;
  setSegments(segments: RunState['segments']): void;
  runFailed(error: WorkerError, now: number): void;
  selectLayer(layer: number | null): void;
  selectTap(tap: string | null): void;
  setViewMetric(metric: Metric): void;
  setPool(pool: PoolStats | null): void;
  setPrefs(patch: Partial<Prefs>): void;
  clearError(): void;
}

export type AppStore = StoreApi<AppState & AppActions>;

export function clampInt(v: number, lo: number, hi: number, fallback: number): number {
  if (!Number.isFinite(v)) return fallback;
  return Math.min(hi, Math.max(lo, Math.round(v)));
}

export function clampK(v: number, fallback: number): number {
  if (!Number.isFinite(v)) return fallback;
  return Math.min(K_RANGE[1], Math.max(K_RANGE[0], v));
}

export function defaultSettings(): RunSettings {
  const d = defaultRunSpec();
  return {
    prompt: 'text' in d.prompt ? d.prompt.text : '',
    promptMode: 'text',
    generate: d.generate,
    precision: d.precision,
    fused: [...d.fused],
    fault: null,
    faultLayer: null,
    seed: d.seed,
    k: d.k,
    metric: d.metric,
  };
}

const emptyRun: RunState = {
  status: 'idle',
  spec: null,
  progress: null,
  startedAt: null,
  elapsedMs: null,
  report: null,
  segments: null,
};

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
  };
}

/** Why the chosen fault cannot run now (its kernel is off), or null. */
export function faultBlocker(s: RunSettings): string | null {
  if (!s.fault) return null;
  const f = faultInfo(s.fault);
  if (s.fused.includes(f.kernel)) return null;
  const k = FUSED_KERNELS.find((x) => x.id === f.kernel);
  return `“${f.title}” lives in the fused kernel “${k?.title ?? f.kernel}”, which is switched off.`;
}

/** Whether Run may start now. */
export function canRun(s: AppState): boolean {
  return (
    s.initStatus === 'ready' &&
    s.modelStatus === 'ready' &&
    s.run.status !== 'running' &&
    s.settings.prompt.trim().length > 0 &&
    faultBlocker(s.settings) === null
  );
}

/** Keeps only valid settings values; unknown or out-of-range ones leave the old value. */
function sanitize(old: RunSettings, patch: Partial<RunSettings>): RunSettings {
  const next = { ...old, ...patch };
  next.generate = clampInt(next.generate, 0, MAX_GENERATE, old.generate);
  next.seed = clampInt(next.seed, 0, 2 ** 31 - 1, old.seed);
  next.k = clampK(next.k, old.k);
  if (next.faultLayer !== null) next.faultLayer = clampInt(next.faultLayer, 0, 1023, 0);
  if (next.prompt.length > LIMITS.promptChars) next.prompt = next.prompt.slice(0, LIMITS.promptChars);
  // Keep the catalog order (and no duplicates) whatever order kernels were switched on in.
  next.fused = FUSED_KERNELS.map((k) => k.id).filter((id) => next.fused.includes(id));
  return next;
}

export function createAppStore(overrides: Partial<AppState> = {}): AppStore {
  return createStore<AppState & AppActions>()((set) => ({
    ...initialState(),
    ...overrides,
    setSettings: (patch) => set((s) => ({ settings: sanitize(s.settings, patch) })),
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
      set({
        run: { ...emptyRun, status: 'running', spec, startedAt: now },
        selectedLayer: null,
        selectedTap: null,
        error: null,
      }),
    runProgress: (p) =>
      set((s) => (s.run.status === 'running' ? { run: { ...s.run, progress: { ...p } } } : {})),
    runFinished: (report, now) =>
      set((s) =>
        s.run.status === 'running'
          ? {
              run: {
                ...s.run,
                status: 'done',
                progress: null,
                report,
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
  }));
}
