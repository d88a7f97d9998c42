// The app's state: GPU init, model load, the generation form and the last run. Pure state and actions;
// the effects (talking to the worker) live in controller.ts.
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { AdapterSummary, GpuFeatures, ModelInfo, WorkerError } from '../worker/api';

export const DEFAULT_PROMPT = 'And God said unto Moses, ';
export const DEFAULT_N = 40;
export const MIN_N = 1;
export const MAX_N = 200;

export type InitStatus = 'idle' | 'pending' | 'ready' | 'no-webgpu' | 'error';
export type ModelStatus = 'idle' | 'loading' | 'ready' | 'error';
export type RunStatus = 'idle' | 'running' | 'done' | 'cancelled' | 'error';

export interface LoadProgressState {
  file: string;
  loadedBytes: number;
  totalBytes: number | null;
}

export interface RunState {
  status: RunStatus;
  /** The prompt as it was when the run started (the textarea may change meanwhile). */
  prompt: string;
  /** How many new tokens were asked for. */
  n: number;
  promptIds: number[];
  newIds: number[];
  /** The continuation decoded so far (final once status is 'done'). */
  text: string;
}

export interface AppState {
  initStatus: InitStatus;
  adapter: AdapterSummary | null;
  features: GpuFeatures | null;
  modelStatus: ModelStatus;
  modelProgress: LoadProgressState | null;
  model: ModelInfo | null;
  prompt: string;
  n: number;
  run: RunState;
  /** The one error shown to the user (null when none). */
  error: WorkerError | null;
}

export interface AppActions {
  setPrompt(prompt: string): void;
  /** Clamps to MIN_N..MAX_N and rounds; a non-number leaves n as it was. */
  setN(n: number): void;
  initStarted(): void;
  initSucceeded(adapter: AdapterSummary, features: GpuFeatures): void;
  initFailed(error: WorkerError): void;
  modelLoadStarted(): void;
  setModelProgress(p: LoadProgressState): void;
  modelLoaded(info: ModelInfo): void;
  modelFailed(error: WorkerError): void;
  runStarted(): void;
  tokenArrived(id: number, text: string): void;
  runFinished(result: { promptIds: number[]; newIds: number[]; text: string }): void;
  runFailed(error: WorkerError): void;
  clearError(): void;
}

export type AppStore = StoreApi<AppState & AppActions>;

export function clampN(n: number, fallback: number = DEFAULT_N): number {
  if (!Number.isFinite(n)) return fallback;
  return Math.min(MAX_N, Math.max(MIN_N, Math.round(n)));
}

const emptyRun: RunState = { status: 'idle', prompt: '', n: 0, promptIds: [], newIds: [], text: '' };

export function initialState(): AppState {
  return {
    initStatus: 'idle',
    adapter: null,
    features: null,
    modelStatus: 'idle',
    modelProgress: null,
    model: null,
    prompt: DEFAULT_PROMPT,
    n: DEFAULT_N,
    run: emptyRun,
    error: null,
  };
}

/** Whether the Generate button may start a run now. */
export function canGenerate(s: AppState): boolean {
  return (
    s.initStatus === 'ready' && s.modelStatus === 'ready' && s.run.status !== 'running' && s.prompt.length > 0
  );
}

export function createAppStore(overrides: Partial<AppState> = {}): AppStore {
  return createStore<AppState & AppActions>()((set) => ({
    ...initialState(),
    ...overrides,
    setPrompt: (prompt) => set({ prompt }),
    setN: (n) => set((s) => ({ n: clampN(n, s.n) })),
    initStarted: () => set({ initStatus: 'pending', adapter: null, features: null, error: null }),
    initSucceeded: (adapter, features) => set({ initStatus: 'ready', adapter, features }),
    initFailed: (error) => set({ initStatus: error.kind === 'no-webgpu' ? 'no-webgpu' : 'error', error }),
    modelLoadStarted: () =>
      set({
        modelStatus: 'loading',
        model: null,
        modelProgress: { file: '', loadedBytes: 0, totalBytes: null },
      }),
    setModelProgress: (p) => set((s) => (s.modelStatus === 'loading' ? { modelProgress: { ...p } } : {})),
    modelLoaded: (model) => set({ modelStatus: 'ready', model }),
    modelFailed: (error) => set({ modelStatus: 'error', model: null, error }),
    runStarted: () =>
      set((s) => ({ run: { ...emptyRun, status: 'running', prompt: s.prompt, n: s.n }, error: null })),
    tokenArrived: (id, text) =>
      set((s) =>
        s.run.status === 'running' ? { run: { ...s.run, newIds: [...s.run.newIds, id], text } } : {},
      ),
    runFinished: (r) =>
      set((s) => ({
        run: { ...s.run, status: 'done', promptIds: [...r.promptIds], newIds: [...r.newIds], text: r.text },
      })),
    runFailed: (error) =>
      set((s) =>
        error.kind === 'cancelled'
          ? { run: { ...s.run, status: 'cancelled' } }
          : { run: { ...s.run, status: 'error' }, error },
      ),
    clearError: () => set({ error: null }),
  }));
}
