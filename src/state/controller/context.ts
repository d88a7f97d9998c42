// What every part of the controller shares: the store, the worker's client (replaced after a device loss),
// the generation counter that makes late answers from a replaced worker harmless, and the options.

import type * as historyDb from '../../run/history';
import type { EngineClient } from '../../worker/client';
import type { AppStore } from '../store';
import type { Watch } from './watchdog';

/** The parts of history.ts the controller uses (tests pass their own). */
export type HistoryApi = Pick<
  typeof historyDb,
  | 'saveRun'
  | 'listRuns'
  | 'getRun'
  | 'deleteRun'
  | 'getCachedModel'
  | 'getCachedModelBlob'
  | 'listCachedModels'
>;

export interface ControllerOptions {
  /** The embedded model: its id and the absolute URL of its folder. */
  embedded: { id: string; url: string };
  /** How often the pool is polled while a run is in flight (ms). */
  pollMs?: number;
  now?: () => number;
  /** Which fp64-class oracle a run uses ('auto': the engine's choice for the adapter; the page's ?oracle=). */
  oracle?: 'auto' | 'gpu' | 'cpu';
  /** Run history and model cache (default: IndexedDB through history.ts). */
  history?: HistoryApi;
  /** How long a call running custom GPU code may give no sign of life before it counts as a hang (ms). */
  watchdogMs?: number;
}

export interface Ctx {
  store: AppStore;
  /** The store's state now. */
  s: () => ReturnType<AppStore['getState']>;
  /** The worker's client now (a new one after a restart). */
  client: () => EngineClient;
  /** Bumps when the worker is replaced: an answer from an older generation is ignored. */
  generation: () => number;
  opts: ControllerOptions;
  hist: HistoryApi;
  now: () => number;
  /** Runs a call that executes custom GPU code under the hang watchdog (watchdog.ts). */
  watch: Watch;
}

export function errText(e: unknown): string {
  return e instanceof Error ? e.message || e.name : String(e);
}
