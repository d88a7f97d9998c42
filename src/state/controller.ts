// The effects behind the store's actions: start the worker's engine, load a model (embedded, URL, files),
// run and cancel comparisons, watch the GPU memory pool, and start over with a fresh worker after a device
// loss (the store — and so the user's settings — survives). The only module that talks to the EngineClient.
import type { LoadedModel } from '../worker/api';
import { asWorkerError, type EngineClient } from '../worker/client';
import { classifyModelFiles } from './model-files';
import { buildSpec } from './spec';
import { type AppStore, canRun, type ModelSource, type TextSegments } from './store';

export interface Controller {
  /** Initialises WebGPU in the worker, then loads the embedded model. */
  start(): Promise<void>;
  loadEmbedded(): Promise<void>;
  /** baseUrl: a folder holding config.json, model.safetensors and tokenizer.json (relative to the page is fine). */
  loadFromUrl(baseUrl: string): Promise<void>;
  /** Files picked or dropped: config.json + model.safetensors (+ tokenizer.json). */
  loadFromFiles(files: File[]): Promise<void>;
  /** Runs the comparison of the current settings; does nothing when a run cannot start now. */
  run(): Promise<void>;
  cancel(): void;
  /** After a device loss or a crash: a new worker and engine, the same model source; settings stay. */
  retry(): Promise<void>;
  refreshPool(): Promise<void>;
  /** Test hook (?debug): makes the GPU device lost. */
  loseDevice(): void;
  dispose(): void;
}

export interface ControllerOptions {
  /** The embedded model: its id and the absolute URL of its folder. */
  embedded: { id: string; url: string };
  /** How often the pool is polled while a run is in flight (ms). */
  pollMs?: number;
  now?: () => number;
}

type Source = ModelSource & { files?: File[] };

function cut(text: string | null, before: string | null, at: string | null): TextSegments | null {
  if (text === null || before === null || at === null) return null;
  return { before, at, after: text.startsWith(before + at) ? text.slice(before.length + at.length) : '' };
}

export function createController(
  store: AppStore,
  makeClient: () => EngineClient,
  opts: ControllerOptions,
): Controller {
  const s = () => store.getState();
  const now = opts.now ?? (() => Date.now());
  const pollMs = opts.pollMs ?? 400;
  let client = makeClient();
  let source: Source | null = null;
  let poll: ReturnType<typeof setInterval> | null = null;
  let generation = 0; // bumps when the worker is replaced: late answers from the old one are ignored

  const stopPoll = () => {
    if (poll !== null) clearInterval(poll);
    poll = null;
  };

  async function refreshPool(): Promise<void> {
    const g = generation;
    try {
      const stats = await client.poolStats();
      if (g === generation && s().initStatus === 'ready') s().setPool(stats);
    } catch {
      // The worker is gone or busy dying; the device-lost path reports that.
    }
  }

  async function init(): Promise<boolean> {
    const g = generation;
    s().initStarted();
    const r = await client.init((e) => {
      if (g !== generation) return;
      stopPoll();
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

  async function load(src: Source, doLoad: () => Promise<LoadedModel>): Promise<void> {
    const g = generation;
    s().modelLoadStarted(
      src.kind === 'files'
        ? { kind: 'files', name: src.name }
        : src.kind === 'url'
          ? { kind: 'url', url: src.url }
          : src,
    );
    try {
      const info = await doLoad();
      if (g !== generation) return;
      source = src;
      s().modelLoaded(info);
    } catch (e) {
      if (g !== generation) return;
      s().modelFailed(asWorkerError(e));
    }
    void refreshPool();
  }

  const loadEmbedded = () => {
    const src: Source = { kind: 'embedded', id: opts.embedded.id, url: opts.embedded.url };
    return load(src, () => client.loadModelFromUrl(src.url, (p) => s().setModelProgress(p)));
  };

  const loadFromUrl = (baseUrl: string) => {
    let url: string;
    try {
      const u = new URL(baseUrl.trim(), typeof document === 'undefined' ? undefined : document.baseURI);
      url = u.href.endsWith('/') ? u.href : `${u.href}/`;
    } catch {
      s().modelFailed({ kind: 'input', message: `not a URL: ${baseUrl.slice(0, 200)}` });
      return Promise.resolve();
    }
    return load({ kind: 'url', url }, () => client.loadModelFromUrl(url, (p) => s().setModelProgress(p)));
  };

  const loadFromFiles = async (files: File[]) => {
    const picked = classifyModelFiles(
      files.map((file) => ({ name: file.name, relativePath: file.webkitRelativePath ?? '', file })),
    );
    if (!picked.ok) {
      // A wrong selection is reported; the model already loaded (if any) stays.
      store.setState({ error: { kind: 'model', message: picked.message } });
      return;
    }
    const src: Source = {
      kind: 'files',
      name: picked.name,
      files: [picked.config.file, picked.weights.file, ...(picked.tokenizer ? [picked.tokenizer.file] : [])],
    };
    await load(src, async () => {
      const [config, weights, tokenizer] = await Promise.all([
        picked.config.file.text(),
        picked.weights.file.arrayBuffer(),
        picked.tokenizer ? picked.tokenizer.file.text() : Promise.resolve(undefined),
      ]);
      s().setModelProgress({ file: 'gpu', loadedBytes: weights.byteLength, totalBytes: weights.byteLength });
      return client.loadModelFromFiles({ config, weights, tokenizer, name: picked.name });
    });
  };

  async function reload(src: Source): Promise<void> {
    if (src.kind === 'files' && src.files) return loadFromFiles(src.files);
    if (src.kind === 'url') return loadFromUrl(src.url);
    return loadEmbedded();
  }

  async function segments(ids: number[], first: number, text: string | null): Promise<TextSegments | null> {
    if (text === null) return null;
    const [before, at] = await Promise.all([
      client.decode(ids.slice(0, first)),
      client.decode(ids.slice(first, first + 1)),
    ]);
    return cut(text, before, at);
  }

  return {
    async start() {
      if (await init()) await loadEmbedded();
    },

    loadEmbedded,
    loadFromUrl,
    loadFromFiles,

    async run() {
      const st = s();
      if (!canRun(st) || !st.model || !st.modelSource) return;
      const built = buildSpec(st.settings, st.modelSource, st.model);
      if (!built.ok) {
        s().clearError();
        store.setState({ error: { kind: 'input', message: built.message } });
        return;
      }
      const g = generation;
      s().runStarted(built.spec, now());
      stopPoll();
      poll = setInterval(() => void refreshPool(), pollMs);
      try {
        const report = await client.compare(built.spec, (p) => {
          if (g === generation) s().runProgress(p);
        });
        if (g !== generation) return;
        s().runFinished(report, now());
        const gen = report.generation;
        if (gen && gen.firstDifference !== null) {
          const fd = gen.firstDifference;
          const [reference, fused] = await Promise.all([
            segments(gen.reference.ids, fd, gen.reference.text),
            segments(gen.fused.ids, fd, gen.fused.text),
          ]);
          if (g === generation && reference && fused && s().run.report === report)
            s().setSegments({ reference, fused });
        }
      } catch (e) {
        if (g === generation) s().runFailed(asWorkerError(e), now());
      } finally {
        if (g === generation) {
          stopPoll();
          await refreshPool();
        }
      }
    },

    cancel() {
      if (s().run.status === 'running') void client.cancel();
    },

    async retry() {
      generation++;
      stopPoll();
      client.terminate();
      client = makeClient();
      const src = source;
      if (s().run.status === 'running') s().runFailed({ kind: 'cancelled', message: 'restarted' }, now());
      if (!(await init())) return;
      if (src) await reload(src);
      else await loadEmbedded();
    },

    refreshPool,

    loseDevice() {
      void client.debugLoseDevice();
    },

    dispose() {
      stopPoll();
      client.terminate();
    },
  };
}
