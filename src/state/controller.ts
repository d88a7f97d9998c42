// The effects behind the store's actions, composed from parts with one job each (controller/): models.ts
// loads models (embedded, URL, files, the cache), open.ts opens links and stored runs, runs.ts runs and
// cancels comparisons, history.ts keeps the run history, pool.ts watches the GPU memory pool. This file
// starts the worker's engine, restarts it with a fresh worker after a device loss (the store — and so the
// user's settings — survives), and runs a link's comparison once its model is ready when the link asked
// to. The only place that creates the EngineClient.

import * as historyDb from '../run/history';
import type { HubProbe, UrlProbe } from '../worker/api';
import type { EngineClient } from '../worker/client';
import type { ControllerOptions, Ctx, HistoryApi } from './controller/context';
import { createHistoryKeeper } from './controller/history';
import { createKernelDesk, type KernelDesk } from './controller/kernels';
import { createModelLoader, type FileLoadOptions, type LoadOutcome } from './controller/models';
import { createOpener } from './controller/open';
import { createPoolWatch } from './controller/pool';
import { createRunner } from './controller/runs';
import { createWatch, WATCHDOG_MS } from './controller/watchdog';
import { isolatedFor } from './kernel-editor';
import { modelMatches } from './spec';
import { type AppStore, canRun } from './store';

export type { ControllerOptions, FileLoadOptions, HistoryApi, KernelDesk, LoadOutcome };

export interface Controller {
  /** Initialises WebGPU in the worker, then loads the embedded model. */
  start(): Promise<void>;
  loadEmbedded(): Promise<void>;
  /** baseUrl: a folder holding config.json, model.safetensors and tokenizer.json (relative to the page is fine). */
  loadFromUrl(baseUrl: string, options?: FileLoadOptions): Promise<void>;
  /** Files picked or dropped: config.json + model.safetensors (+ tokenizer.json). */
  loadFromFiles(files: File[], options?: FileLoadOptions): Promise<void>;
  /** A URL model with a pinned sha256 (a Hub preset): from this browser's cache if kept there, else downloaded. */
  loadPinned(ref: {
    url: string;
    sha256: string;
    files?: Record<string, string>;
    bytes?: Record<string, number>;
  }): Promise<LoadOutcome>;
  /** A Hub repository at a revision through the Hub's API (null when the worker cannot ask). */
  resolveHub(repo: string, revision: string, hubUrl: string): Promise<HubProbe | null>;
  /** Sizes and memory need of a URL model before downloading it (null when the worker cannot tell). */
  probeModelUrl(url: string): Promise<UrlProbe | null>;
  /** Stops a model download in progress; the model loaded before stays loaded. */
  cancelModelLoad(): void;
  /** sha256 of the model files kept in this browser. */
  cachedModelSha256s(): Promise<string[]>;
  /**
   * Opens a link's fragment ('#r1=…' or '#s=…'): restores every setting and loads (or asks for) its model.
   * A malformed link sets one message (linkError) and changes nothing else. An empty fragment does nothing.
   */
  openLink(fragment: string): Promise<void>;
  /** Downloads the URL model the pending ModelNeed names (after the viewer agreed), checking its hash. */
  fetchNeededModel(): Promise<void>;
  refreshHistory(): Promise<void>;
  /** Shows a stored run's report without running it, restores its settings, and loads its model. */
  openStoredRun(id: string): Promise<void>;
  deleteStoredRun(id: string): Promise<void>;
  /** Runs the comparison of the current settings; does nothing when a run cannot start now. */
  run(): Promise<void>;
  cancel(): void;
  /** After a device loss or a crash: a new worker and engine, the same model source; settings stay. */
  retry(): Promise<void>;
  refreshPool(): Promise<void>;
  /** Test hook (?debug): makes the GPU device lost. */
  loseDevice(): void;
  /** The kernel editor (custom kernels): its state and effects. */
  kernels: KernelDesk;
  /** The worker's client now (a new one after a restart): for modes with their own state (your runs). */
  client(): EngineClient;
  dispose(): void;
}

export function createController(
  store: AppStore,
  makeClient: () => EngineClient,
  opts: ControllerOptions,
): Controller {
  let client = makeClient();
  let generation = 0; // bumps when the worker is replaced: late answers from the old one are ignored
  let started: Promise<void> | null = null;
  const ctx: Ctx = {
    store,
    s: () => store.getState(),
    client: () => client,
    generation: () => generation,
    opts,
    hist: opts.history ?? historyDb,
    now: opts.now ?? (() => Date.now()),
    // A hang: the worker is stopped with its GPU work at once (late answers are ignored); Restart starts anew.
    watch: createWatch(opts.watchdogMs ?? WATCHDOG_MS, (e) => {
      generation++;
      pool.stop();
      client.terminate();
      s().deviceLost(e);
    }),
  };
  const s = ctx.s;
  const pool = createPoolWatch(ctx);
  const models = createModelLoader(ctx, pool);
  const history = createHistoryKeeper(ctx);
  const kernels = createKernelDesk(ctx);
  const runner = createRunner(
    ctx,
    pool,
    history,
    () => {
      s().runFailed({ kind: 'cancelled', message: 'run cancelled' }, ctx.now());
      void restartWorker();
    },
    (custom) => isolatedFor(kernels.editor.getState(), custom),
  );
  const opener = createOpener(ctx, () => started, models, history, runner);

  async function init(): Promise<boolean> {
    const g = generation;
    s().initStarted();
    const r = await client.init((e) => {
      if (g !== generation) return;
      pool.stop();
      s().deviceLost(e.kind === 'device-lost' ? e : { kind: 'device-lost', message: e.message });
    });
    if (g !== generation) return false;
    if (!r.ok) {
      s().initFailed(r.error);
      // Nothing can run without a device: free the worker.
      if (r.error.kind === 'no-webgpu') client.terminate();
      return false;
    }
    s().initSucceeded(r.adapter, r.features);
    return true;
  }

  /** A new worker and engine (the old one is terminated, with any GPU work), the same model loaded again. */
  async function restartWorker(): Promise<void> {
    generation++;
    pool.stop();
    client.terminate();
    client = makeClient();
    const src = models.source();
    if (!(await init())) return;
    if (src) await models.reload(src);
    else await models.loadEmbedded();
  }

  let unsubscribe = () => {};
  const controller: Controller = {
    start() {
      started ??= (async () => {
        void history.refresh();
        if (await init()) await models.loadEmbedded();
      })();
      return started;
    },
    loadEmbedded: models.loadEmbedded,
    loadFromUrl: models.loadFromUrl,
    loadFromFiles: models.loadFromFiles,
    loadPinned: models.loadPinned,
    probeModelUrl: models.probeUrl,
    resolveHub: models.resolveHub,
    cancelModelLoad: models.cancelLoad,
    cachedModelSha256s: models.cachedSha256s,
    openLink: opener.openLink,
    fetchNeededModel: opener.fetchNeededModel,
    refreshHistory: history.refresh,
    openStoredRun: opener.openStoredRun,
    deleteStoredRun: history.delete,
    run() {
      // A custom kernel's isolated test first (once per source), so its report can say how it fared alone.
      // Without one the run starts synchronously, as before.
      if (canRun(s()) && kernels.untested()) return kernels.beforeRun().then(() => runner.run());
      return runner.run();
    },
    cancel: runner.cancel,
    async retry() {
      if (s().run.status === 'running') s().runFailed({ kind: 'cancelled', message: 'restarted' }, ctx.now());
      await restartWorker();
    },
    refreshPool: pool.refresh,
    loseDevice() {
      void client.debugLoseDevice();
    },
    kernels,
    client: () => client,
    dispose() {
      unsubscribe();
      pool.stop();
      client.terminate();
    },
  };
  // A link that asked to run at once (and was allowed to): run as soon as its model is ready, once.
  unsubscribe = store.subscribe((st) => {
    const l = st.linked;
    if (!l?.autorunPending || !canRun(st) || !modelMatches(l.spec.model, st)) return;
    store.setState({ linked: { ...l, autorunPending: false } }); // first: a failing start must not loop
    void controller.run();
  });
  return controller;
}
