// Loading a model: the embedded one, one from a URL (a Hub preset is a URL model with a pinned sha256), files
// picked or dropped, or the IndexedDB cache (loaded like picked files); a refused hash or a cancelled
// download keeps the model loaded before. Remembers where the model came from, so a restart after a device
// loss loads it again.

import type { CachedModel } from '../../run/history';
import { modelNameOfUrl, readHubOverride } from '../../run/hub';
import type { HubProbe, LoadedModel, UrlProbe, WorkerError } from '../../worker/api';
import { asWorkerError } from '../../worker/client';
import { classifyModelFiles, nameFromConfig } from '../model-files';
import type { ModelSource } from '../store';
import type { Ctx } from './context';
import type { PoolWatch } from './pool';

export interface FileLoadOptions {
  /** Refuse files whose weights do not hash to this sha256 (a link's model). */
  expectSha256?: string;
  /** Sharded weights: refuse a shard that does not hash to the sha256 named for it (a link, the Hub). */
  expectFiles?: Record<string, string>;
  /** A URL model: the size of each file the viewer agreed to (refused past it or short of it). */
  expectBytes?: Record<string, number>;
}

/** The test-only override's shorter timeouts (src/run/hub.ts), or undefined. */
function netOverride() {
  try {
    return readHubOverride(typeof localStorage === 'undefined' ? null : localStorage)?.limits;
  } catch {
    return undefined;
  }
}

/** How a load ended ('stale': a newer worker replaced the one that ran it). */
export type LoadOutcome = 'loaded' | 'cancelled' | 'failed' | 'stale';

/** Where the loaded model came from, with what it takes to load it again after a device loss. */
export type Source = ModelSource & {
  files?: File[];
  expectSha256?: string;
  expectFiles?: Record<string, string>;
  expectBytes?: Record<string, number>;
};

export interface ModelLoader {
  loadEmbedded(): Promise<void>;
  loadFromUrl(baseUrl: string, options?: FileLoadOptions): Promise<void>;
  loadFromFiles(files: File[], options?: FileLoadOptions): Promise<void>;
  /** Cached files as the model a link names (`as`: the URL or name they stand in for). */
  loadCached(m: CachedModel, expectSha256: string, as: { url: string } | { name: string }): Promise<void>;
  /**
   * A URL model known by its sha256 (a Hub preset): from the IndexedDB cache when it is there (no network),
   * else downloaded and checked against the sha256.
   */
  loadPinned(ref: {
    url: string;
    sha256: string;
    files?: Record<string, string>;
    bytes?: Record<string, number>;
  }): Promise<LoadOutcome>;
  /**
   * Sizes and memory need of a URL model before its download (null when the worker cannot tell); the sizes shown
   * are the ones a download of that URL is then held to.
   */
  probeUrl(url: string): Promise<UrlProbe | null>;
  /** A Hub repository at a revision: commit, files, sizes, sha256, memory need (null when the worker cannot ask). */
  resolveHub(repo: string, revision: string, hubUrl: string): Promise<HubProbe | null>;
  /** Stops a model download or load in progress; the model loaded before stays. */
  cancelLoad(): void;
  /** sha256 of the models kept in this browser (empty without IndexedDB). */
  cachedSha256s(): Promise<string[]>;
  /** The model loaded last (and how), or null. */
  source(): Source | null;
  /** Loads `src` again (after a restart). */
  reload(src: Source): Promise<void>;
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

/** The cached files as File objects (what a picker gives), so a cached model loads like picked files. */
function filesOf(m: Omit<CachedModel, 'weights'> & { weights: ArrayBuffer | Blob }): File[] {
  return [
    new File([m.config], 'config.json', { type: 'application/json' }),
    new File([m.weights], 'model.safetensors'),
    ...(m.tokenizer === undefined
      ? []
      : [new File([m.tokenizer], 'tokenizer.json', { type: 'application/json' })]),
  ];
}

export function createModelLoader(ctx: Ctx, pool: PoolWatch): ModelLoader {
  const { s, store } = ctx;
  let source: Source | null = null;
  /** The sizes the viewer was last shown for a URL (its probe): the download is held to them. */
  let shown: { url: string; bytes: Record<string, number> } | null = null;

  async function load(src: Source, doLoad: () => Promise<LoadedModel>): Promise<LoadOutcome> {
    const g = ctx.generation();
    const before = s();
    const prev = {
      model: before.model,
      modelSource: before.modelSource,
      ready: before.modelStatus === 'ready',
    };
    s().modelLoadStarted(publicSource(src));
    try {
      const info = await doLoad();
      if (g !== ctx.generation()) return 'stale';
      source = src;
      s().modelLoaded(info);
      const need = s().modelNeed;
      if (need && need.ref.sha256 === info.sha256) s().setModelNeed(null);
      void pool.refresh();
      return 'loaded';
    } catch (e) {
      if (g !== ctx.generation()) return 'stale';
      const err = asWorkerError(e);
      const cancelled = err.kind === 'cancelled';
      // A refused model (bad files, a wrong hash, too large) loads nothing: the engine installs a model only once
      // it is known good, so the worker still holds the one from before, and the page keeps it too. Only a lost
      // device takes the old model with it.
      if (err.kind !== 'device-lost' && err.kind !== 'no-webgpu' && prev.ready && prev.model)
        store.setState({
          modelStatus: 'ready',
          model: prev.model,
          modelSource: prev.modelSource,
          modelProgress: null,
          // A cancel is what the user asked for: no error is shown.
          ...(cancelled ? {} : { error: err }),
        });
      else s().modelFailed(err);
      void pool.refresh();
      return cancelled ? 'cancelled' : 'failed';
    }
  }

  const loadEmbedded = () => {
    const e = ctx.opts.embedded;
    const src: Source = { kind: 'embedded', id: e.id, url: e.url };
    return load(src, () => ctx.client().loadModelFromUrl(src.url, (p) => s().setModelProgress(p)));
  };

  const loadFromUrl = (baseUrl: string, o: FileLoadOptions = {}) => {
    let url: string;
    try {
      const u = new URL(baseUrl.trim(), typeof document === 'undefined' ? undefined : document.baseURI);
      url = u.href.endsWith('/') ? u.href : `${u.href}/`;
    } catch {
      s().modelFailed({ kind: 'input', message: `not a URL: ${baseUrl.slice(0, 200)}` });
      return Promise.resolve<LoadOutcome>('failed');
    }
    const expectBytes = o.expectBytes ?? (shown?.url === url ? shown.bytes : undefined);
    const net = netOverride();
    return load(
      { kind: 'url', url, expectSha256: o.expectSha256, expectFiles: o.expectFiles, expectBytes },
      () =>
        ctx.client().loadModelFromUrl(url, (p) => s().setModelProgress(p), {
          expectSha256: o.expectSha256,
          ...(o.expectFiles ? { expectFiles: o.expectFiles } : {}),
          ...(expectBytes ? { expectBytes } : {}),
          ...(net ? { net } : {}),
          cache: true,
        }),
    );
  };

  /** Files as a model: `as` names where they stand in for (a cached URL model keeps its URL), `cache` keeps them. */
  const loadFileSet = async (
    files: File[],
    o: FileLoadOptions & { as?: { url: string } | { name: string }; cache: boolean },
  ): Promise<LoadOutcome> => {
    const picked = classifyModelFiles(
      files.map((file) => ({ name: file.name, relativePath: file.webkitRelativePath ?? '', file })),
    );
    if (!picked.ok) {
      // A wrong selection is reported; the model already loaded (if any) stays.
      store.setState({ error: { kind: 'model', message: picked.message } });
      return 'failed';
    }
    const list = [
      picked.config.file,
      ...(picked.weights ? [picked.weights.file] : [picked.index.file, ...picked.shards.map((x) => x.file)]),
      ...(picked.tokenizer ? [picked.tokenizer.file] : []),
    ];
    const as = o.as;
    // A cached URL model keeps its URL's name (a Hub repo's name), not the file's; files that are no folder and have
    // generic names (model.safetensors) are named by their config (its _name_or_path, or architecture and size).
    const name = as
      ? 'name' in as
        ? as.name
        : modelNameOfUrl(as.url)
      : (picked.name ?? nameFromConfig(await picked.config.file.text()) ?? 'model');
    const src: Source =
      as && 'url' in as
        ? { kind: 'url', url: as.url, files: list, expectSha256: o.expectSha256 }
        : { kind: 'files', name, files: list, expectSha256: o.expectSha256 };
    return load(src, async () => {
      const client = ctx.client();
      if (!picked.weights) {
        // Sharded: the worker checks the index against every shard's header, then streams them one by one.
        if (!client.loadModelFromShards)
          throw { kind: 'model', message: 'sharded weights cannot be loaded here' } satisfies WorkerError;
        const [config, index, tokenizer] = await Promise.all([
          picked.config.file.text(),
          picked.index.file.text(),
          picked.tokenizer ? picked.tokenizer.file.text() : Promise.resolve(undefined),
        ]);
        const shards = picked.shards.map((x) => ({ file: x.file.name, blob: x.file as Blob }));
        const size = shards.reduce((a, x) => a + x.blob.size, 0);
        s().setModelProgress({ file: 'gpu', loadedBytes: size, totalBytes: size });
        return client.loadModelFromShards(
          { config, index, shards, tokenizer, name },
          { expectSha256: o.expectSha256, ...(o.expectFiles ? { expectFiles: o.expectFiles } : {}) },
        );
      }
      const one = picked.weights;
      if (client.loadModelFromBlob) {
        // The worker streams the weights (hashing them on the way): never read whole on either side.
        const w = one.file;
        const [config, tokenizer] = await Promise.all([
          picked.config.file.text(),
          picked.tokenizer ? picked.tokenizer.file.text() : Promise.resolve(undefined),
        ]);
        s().setModelProgress({ file: 'gpu', loadedBytes: w.size, totalBytes: w.size });
        return client.loadModelFromBlob(
          { config, weights: w, tokenizer, name },
          { expectSha256: o.expectSha256, cache: o.cache },
        );
      }
      const [config, weights, tokenizer] = await Promise.all([
        picked.config.file.text(),
        one.file.arrayBuffer(),
        picked.tokenizer ? picked.tokenizer.file.text() : Promise.resolve(undefined),
      ]);
      s().setModelProgress({ file: 'gpu', loadedBytes: weights.byteLength, totalBytes: weights.byteLength });
      return ctx
        .client()
        .loadModelFromFiles(
          { config, weights, tokenizer, name },
          { expectSha256: o.expectSha256, cache: o.cache },
        );
    });
  };

  const done = () => undefined;
  return {
    loadEmbedded: () => loadEmbedded().then(done),
    loadFromUrl: (url, o) => loadFromUrl(url, o).then(done),
    loadFromFiles: (files, o = {}) =>
      loadFileSet(files, { expectSha256: o.expectSha256, expectFiles: o.expectFiles, cache: true }).then(
        done,
      ),
    loadCached: (m, expectSha256, as) =>
      loadFileSet(filesOf(m), { expectSha256, as, cache: false }).then(done),
    async loadPinned(ref) {
      // Sharded models are not kept in this browser (they are the large ones): always downloaded.
      if (ref.files)
        return loadFromUrl(ref.url, {
          expectSha256: ref.sha256,
          expectFiles: ref.files,
          expectBytes: ref.bytes,
        });
      let cached: Awaited<ReturnType<typeof ctx.hist.getCachedModelBlob>>;
      try {
        cached = await ctx.hist.getCachedModelBlob(ref.sha256);
      } catch {
        cached = undefined; // no IndexedDB: download it
      }
      if (cached)
        return loadFileSet(filesOf(cached), { expectSha256: ref.sha256, as: { url: ref.url }, cache: false });
      return loadFromUrl(ref.url, { expectSha256: ref.sha256, expectBytes: ref.bytes });
    },
    async probeUrl(url) {
      const client = ctx.client();
      if (!client.probeModelUrl) return null;
      const probe = await client.probeModelUrl(url, netOverride());
      const folder = url.endsWith('/') ? url : `${url}/`;
      const bytes: Record<string, number> = {};
      for (const f of probe.files) if (f.bytes !== null) bytes[f.file] = f.bytes;
      shown = { url: folder, bytes };
      return probe;
    },
    async resolveHub(repo, revision, hubUrl) {
      const client = ctx.client();
      return client.resolveHub ? client.resolveHub(repo, revision, hubUrl, netOverride()) : null;
    },
    cancelLoad() {
      if (s().modelStatus === 'loading') void ctx.client().cancel();
    },
    async cachedSha256s() {
      try {
        return (await ctx.hist.listCachedModels()).map((m) => m.sha256);
      } catch {
        return [];
      }
    },
    source: () => source,
    async reload(src) {
      if (src.files)
        await loadFileSet(src.files, {
          expectSha256: src.expectSha256,
          as: src.kind === 'url' ? { url: src.url } : src.kind === 'files' ? { name: src.name } : undefined,
          cache: false,
        });
      else if (src.kind === 'url')
        await loadFromUrl(src.url, {
          expectSha256: src.expectSha256,
          expectFiles: src.expectFiles,
          expectBytes: src.expectBytes,
        });
      else await loadEmbedded();
    },
  };
}
