// The effects behind the store's actions: start the worker's engine, load a model (embedded, URL, files,
// the IndexedDB model cache), open links and stored runs, run and cancel comparisons (each finished run is
// kept in the history), watch the GPU memory pool, and start over with a fresh worker after a device loss
// (the store — and so the user's settings — survives). The only module that talks to the EngineClient.
import type { Report } from '../compare/analyze';
import { autorunAllowed, decodeLink, LinkError, type LinkPayload } from '../run/permalink';
import { type ModelRef, parseRunSpec, type RunSpec } from '../run/runspec';
import { scenarioById } from '../run/scenarios';
import type { LoadedModel } from '../worker/api';
import { asWorkerError, type EngineClient } from '../worker/client';
import type { CachedModel } from './history';
import * as historyDb from './history';
import { classifyModelFiles } from './model-files';
import { buildSpec, modelMatches } from './spec';
import {
  type AppStore,
  canRun,
  type ModelNeed,
  type ModelSource,
  type ScenarioView,
  type TextSegments,
} from './store';

/** The parts of history.ts the controller uses (tests pass their own). */
export type HistoryApi = Pick<
  typeof historyDb,
  'saveRun' | 'listRuns' | 'getRun' | 'deleteRun' | 'getCachedModel'
>;

export interface FileLoadOptions {
  /** Refuse files whose weights do not hash to this sha256 (a link's model). */
  expectSha256?: string;
}

export interface Controller {
  /** Initialises WebGPU in the worker, then loads the embedded model. */
  start(): Promise<void>;
  loadEmbedded(): Promise<void>;
  /** baseUrl: a folder holding config.json, model.safetensors and tokenizer.json (relative to the page is fine). */
  loadFromUrl(baseUrl: string, options?: FileLoadOptions): Promise<void>;
  /** Files picked or dropped: config.json + model.safetensors (+ tokenizer.json). */
  loadFromFiles(files: File[], options?: FileLoadOptions): Promise<void>;
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
  dispose(): void;
}

export interface ControllerOptions {
  /** The embedded model: its id and the absolute URL of its folder. */
  embedded: { id: string; url: string };
  /** How often the pool is polled while a run is in flight (ms). */
  pollMs?: number;
  now?: () => number;
  /** Run history and model cache (default: IndexedDB through history.ts). */
  history?: HistoryApi;
}

/** Where the loaded model came from, with what it takes to load it again after a device loss. */
type Source = ModelSource & { files?: File[]; expectSha256?: string };

const SCENARIO_FRAGMENT = /^#?s=([a-z0-9][a-z0-9-]{0,39})(?:\/([1-9]\d?))?$/;

/** The scenario a (decoded, hence valid) '#s=' fragment names, or null. */
function scenarioOf(fragment: string): ScenarioView | null {
  const m = SCENARIO_FRAGMENT.exec(fragment.trim());
  if (!m || !scenarioById(m[1])) return null;
  return { id: m[1], variant: m[2] === undefined ? null : Number(m[2]), step: 0 };
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message || e.name : String(e);
}

/** A stored report as this build reads it, or null (a record written by something else). */
function storedReport(v: unknown): Report | null {
  if (typeof v !== 'object' || v === null) return null;
  const r = v as Record<string, unknown>;
  return Array.isArray(r.layers) &&
    typeof r.verdict === 'string' &&
    typeof r.metric === 'string' &&
    typeof r.spec === 'object'
    ? (v as Report)
    : null;
}

/** The cached files as File objects (what a picker gives), so a cached model loads like picked files. */
function filesOf(m: CachedModel): File[] {
  return [
    new File([m.config], 'config.json', { type: 'application/json' }),
    new File([m.weights], 'model.safetensors'),
    ...(m.tokenizer === undefined
      ? []
      : [new File([m.tokenizer], 'tokenizer.json', { type: 'application/json' })]),
  ];
}

function publicSource(src: Source): ModelSource {
  switch (src.kind) {
    case 'embedded':
      return { kind: 'embedded', id: src.id, url: src.url };
    case 'url':
      return { kind: 'url', url: src.url };
    case 'files':
      return { kind: 'files', name: src.name };
  }
}

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
  const hist: HistoryApi = opts.history ?? historyDb;
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
    const before = s();
    const prev = {
      model: before.model,
      modelSource: before.modelSource,
      ready: before.modelStatus === 'ready',
    };
    s().modelLoadStarted(publicSource(src));
    try {
      const info = await doLoad();
      if (g !== generation) return;
      source = src;
      s().modelLoaded(info);
      const need = s().modelNeed;
      if (need && need.ref.sha256 === info.sha256) s().setModelNeed(null);
    } catch (e) {
      if (g !== generation) return;
      const err = asWorkerError(e);
      // A refused hash loads nothing: the worker still holds the model from before, so the page does too.
      if (err.kind === 'model-mismatch' && prev.ready && prev.model)
        store.setState({
          modelStatus: 'ready',
          model: prev.model,
          modelSource: prev.modelSource,
          modelProgress: null,
          error: err,
        });
      else s().modelFailed(err);
    }
    void refreshPool();
  }

  const loadEmbedded = () => {
    const src: Source = { kind: 'embedded', id: opts.embedded.id, url: opts.embedded.url };
    return load(src, () => client.loadModelFromUrl(src.url, (p) => s().setModelProgress(p)));
  };

  const loadFromUrl = (baseUrl: string, o: FileLoadOptions = {}) => {
    let url: string;
    try {
      const u = new URL(baseUrl.trim(), typeof document === 'undefined' ? undefined : document.baseURI);
      url = u.href.endsWith('/') ? u.href : `${u.href}/`;
    } catch {
      s().modelFailed({ kind: 'input', message: `not a URL: ${baseUrl.slice(0, 200)}` });
      return Promise.resolve();
    }
    return load({ kind: 'url', url, expectSha256: o.expectSha256 }, () =>
      client.loadModelFromUrl(url, (p) => s().setModelProgress(p), {
        expectSha256: o.expectSha256,
        cache: true,
      }),
    );
  };

  /** Files as a model: `as` names where they stand in for (a cached URL model keeps its URL), `cache` keeps them. */
  const loadFileSet = async (
    files: File[],
    o: FileLoadOptions & { as?: { url: string } | { name: string }; cache: boolean },
  ) => {
    const picked = classifyModelFiles(
      files.map((file) => ({ name: file.name, relativePath: file.webkitRelativePath ?? '', file })),
    );
    if (!picked.ok) {
      // A wrong selection is reported; the model already loaded (if any) stays.
      store.setState({ error: { kind: 'model', message: picked.message } });
      return;
    }
    const list = [
      picked.config.file,
      picked.weights.file,
      ...(picked.tokenizer ? [picked.tokenizer.file] : []),
    ];
    const as = o.as;
    const name = as && 'name' in as ? as.name : picked.name;
    const src: Source =
      as && 'url' in as
        ? { kind: 'url', url: as.url, files: list, expectSha256: o.expectSha256 }
        : { kind: 'files', name, files: list, expectSha256: o.expectSha256 };
    await load(src, async () => {
      const [config, weights, tokenizer] = await Promise.all([
        picked.config.file.text(),
        picked.weights.file.arrayBuffer(),
        picked.tokenizer ? picked.tokenizer.file.text() : Promise.resolve(undefined),
      ]);
      s().setModelProgress({ file: 'gpu', loadedBytes: weights.byteLength, totalBytes: weights.byteLength });
      return client.loadModelFromFiles(
        { config, weights, tokenizer, name },
        { expectSha256: o.expectSha256, cache: o.cache },
      );
    });
  };

  const loadFromFiles = (files: File[], o: FileLoadOptions = {}) =>
    loadFileSet(files, { expectSha256: o.expectSha256, cache: true });

  async function reload(src: Source): Promise<void> {
    if (src.files)
      return loadFileSet(src.files, {
        expectSha256: src.expectSha256,
        as: src.kind === 'url' ? { url: src.url } : src.kind === 'files' ? { name: src.name } : undefined,
        cache: false,
      });
    if (src.kind === 'url') return loadFromUrl(src.url, { expectSha256: src.expectSha256 });
    return loadEmbedded();
  }

  // ------------------------------------------------------------------------------ links, models, history

  let started: Promise<void> | null = null;
  /** Bumps with every link or stored run opened: a slower, older one must not act after a newer one. */
  let openSeq = 0;

  /** Loads the model a run names: already loaded, the embedded one, from the cache — or asks the viewer. */
  async function ensureModel(ref: ModelRef, from: ModelNeed['from'], seq: number): Promise<void> {
    await started;
    if (seq !== openSeq) return;
    const st = s();
    if (st.initStatus !== 'ready') return; // no GPU: nothing can be loaded; the page says why
    if (modelMatches(ref, st)) return;
    if (ref.kind === 'embedded') {
      if (ref.id === opts.embedded.id && st.modelStatus !== 'loading') await loadEmbedded();
      return;
    }
    let cached: CachedModel | undefined;
    try {
      cached = await hist.getCachedModel(ref.sha256);
    } catch {
      cached = undefined; // no IndexedDB: ask for the model
    }
    if (seq !== openSeq) return;
    if (cached) {
      await loadFileSet(filesOf(cached), {
        expectSha256: ref.sha256,
        as: ref.kind === 'url' ? { url: ref.url } : { name: ref.name ?? cached.name },
        cache: false,
      });
      if (seq !== openSeq || modelMatches(ref, s())) return;
    }
    s().setModelNeed({ ref, from });
  }

  async function refreshHistory(): Promise<void> {
    try {
      const runs = await hist.listRuns();
      s().setHistory({ status: 'ready', runs, message: null });
    } catch (e) {
      s().setHistory({ status: 'unavailable', runs: [], message: errText(e) });
    }
  }

  async function keep(spec: RunSpec, report: Report): Promise<void> {
    try {
      await hist.saveRun({ spec, report, createdAt: report.createdAt });
    } catch (e) {
      s().setHistory({ status: 'unavailable', message: errText(e) });
      return;
    }
    await refreshHistory();
  }

  /** Cuts both continuations at their first difference (for the highlight), with the loaded tokenizer. */
  async function showSegments(report: Report, g: number): Promise<void> {
    const gen = report.generation;
    if (!gen || gen.firstDifference === null) return;
    const fd = gen.firstDifference;
    const [reference, fused] = await Promise.all([
      segments(gen.reference.ids, fd, gen.reference.text),
      segments(gen.fused.ids, fd, gen.fused.text),
    ]);
    if (g === generation && reference && fused && s().run.report === report)
      s().setSegments({ reference, fused });
  }

  async function segments(ids: number[], first: number, text: string | null): Promise<TextSegments | null> {
    if (text === null) return null;
    const [before, at] = await Promise.all([
      client.decode(ids.slice(0, first)),
      client.decode(ids.slice(first, first + 1)),
    ]);
    return cut(text, before, at);
  }

  let unsubscribe = () => {};
  const controller: Controller = {
    start() {
      started ??= (async () => {
        void refreshHistory();
        if (await init()) await loadEmbedded();
      })();
      return started;
    },

    loadEmbedded,
    loadFromUrl,
    loadFromFiles,

    async openLink(fragment) {
      const f = fragment.trim();
      if (f === '' || f === '#') return;
      let payload: LinkPayload;
      try {
        payload = decodeLink(f);
      } catch (e) {
        s().setLinkError(e instanceof LinkError ? e.message : 'This link could not be read.');
        return;
      }
      const ref = payload.spec.model;
      if (ref.kind === 'embedded' && ref.id !== opts.embedded.id) {
        s().setLinkError(
          `This link names the embedded model “${ref.id}”, which this site does not have (it has ${opts.embedded.id}).`,
        );
        return;
      }
      if (s().run.status === 'running') {
        s().setLinkError('A comparison is running: cancel it, then open the link again.');
        return;
      }
      const scenario = scenarioOf(f);
      const seq = ++openSeq;
      s().openRun(
        payload.spec,
        {
          spec: payload.spec,
          origin: scenario ? 'scenario' : 'link',
          sharer: payload.sharer ?? null,
          autorunPending: autorunAllowed(payload),
        },
        scenario,
      );
      await ensureModel(ref, 'link', seq);
    },

    async fetchNeededModel() {
      const need = s().modelNeed;
      if (need?.ref.kind !== 'url') return;
      const st = s();
      if (st.initStatus !== 'ready' || st.modelStatus === 'loading' || st.run.status === 'running') return;
      await loadFromUrl(need.ref.url, { expectSha256: need.ref.sha256 });
    },

    refreshHistory,

    async openStoredRun(id) {
      if (s().run.status === 'running') return;
      const seq = ++openSeq;
      let rec: historyDb.StoredRun | undefined;
      try {
        rec = await hist.getRun(id);
      } catch (e) {
        s().setHistory({ notice: `The stored run could not be read: ${errText(e)}` });
        return;
      }
      if (seq !== openSeq) return;
      if (!rec) {
        s().setHistory({ notice: 'That run is no longer in the history.' });
        await refreshHistory();
        return;
      }
      let spec: RunSpec;
      try {
        spec = parseRunSpec(rec.spec);
      } catch {
        s().setHistory({ notice: 'This build cannot read that stored run’s settings.' });
        return;
      }
      const report = storedReport(rec.report);
      if (report) {
        s().showStoredRun({ id: rec.id, createdAt: rec.createdAt }, spec, report);
        s().setHistory({ notice: null });
      } else {
        s().openRun(spec, null, null);
        s().setHistory({
          notice:
            'Only the summary of that run was kept (its report was too large to store): its settings are restored; run it to see the report.',
        });
      }
      await ensureModel(spec.model, 'history', seq);
      if (report && seq === openSeq && modelMatches(spec.model, s())) await showSegments(report, generation);
    },

    async deleteStoredRun(id) {
      try {
        await hist.deleteRun(id);
      } catch (e) {
        s().setHistory({ notice: `The run could not be deleted: ${errText(e)}` });
        return;
      }
      if (s().storedRun?.id === id) s().setStoredRun(null);
      await refreshHistory();
    },

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
        await Promise.all([keep(built.spec, report), showSegments(report, g)]);
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
      unsubscribe();
      stopPoll();
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
