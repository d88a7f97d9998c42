// Loading a model: the embedded one, one from a URL, files picked or dropped, or the IndexedDB cache
// (loaded like picked files); a refused hash keeps the model loaded before. Remembers where the model came
// from, so a restart after a device loss loads it again.
import type { LoadedModel } from '../../worker/api';
import { asWorkerError } from '../../worker/client';
import type { CachedModel } from '../history';
import { classifyModelFiles } from '../model-files';
import type { ModelSource } from '../store';
import type { Ctx } from './context';
import type { PoolWatch } from './pool';

export interface FileLoadOptions {
  /** Refuse files whose weights do not hash to this sha256 (a link's model). */
  expectSha256?: string;
}

/** Where the loaded model came from, with what it takes to load it again after a device loss. */
export type Source = ModelSource & { files?: File[]; expectSha256?: string };

export interface ModelLoader {
  loadEmbedded(): Promise<void>;
  loadFromUrl(baseUrl: string, options?: FileLoadOptions): Promise<void>;
  loadFromFiles(files: File[], options?: FileLoadOptions): Promise<void>;
  /** Cached files as the model a link names (`as`: the URL or name they stand in for). */
  loadCached(m: CachedModel, expectSha256: string, as: { url: string } | { name: string }): Promise<void>;
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
function filesOf(m: CachedModel): File[] {
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

  async function load(src: Source, doLoad: () => Promise<LoadedModel>): Promise<void> {
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
      if (g !== ctx.generation()) return;
      source = src;
      s().modelLoaded(info);
      const need = s().modelNeed;
      if (need && need.ref.sha256 === info.sha256) s().setModelNeed(null);
    } catch (e) {
      if (g !== ctx.generation()) return;
      const err = asWorkerError(e);
      // A refused model (bad files, a wrong hash, too large) loads nothing: the engine installs a model only once
      // it is known good, so the worker still holds the one from before, and the page keeps it too. Only a lost
      // device takes the old model with it.
      if (err.kind !== 'device-lost' && err.kind !== 'no-webgpu' && prev.ready && prev.model)
        store.setState({
          modelStatus: 'ready',
          model: prev.model,
          modelSource: prev.modelSource,
          modelProgress: null,
          error: err,
        });
      else s().modelFailed(err);
    }
    void pool.refresh();
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
      return Promise.resolve();
    }
    return load({ kind: 'url', url, expectSha256: o.expectSha256 }, () =>
      ctx.client().loadModelFromUrl(url, (p) => s().setModelProgress(p), {
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
      return ctx
        .client()
        .loadModelFromFiles(
          { config, weights, tokenizer, name },
          { expectSha256: o.expectSha256, cache: o.cache },
        );
    });
  };

  return {
    loadEmbedded,
    loadFromUrl,
    loadFromFiles: (files, o = {}) => loadFileSet(files, { expectSha256: o.expectSha256, cache: true }),
    loadCached: (m, expectSha256, as) => loadFileSet(filesOf(m), { expectSha256, as, cache: false }),
    source: () => source,
    reload(src) {
      if (src.files)
        return loadFileSet(src.files, {
          expectSha256: src.expectSha256,
          as: src.kind === 'url' ? { url: src.url } : src.kind === 'files' ? { name: src.name } : undefined,
          cache: false,
        });
      if (src.kind === 'url') return loadFromUrl(src.url, { expectSha256: src.expectSha256 });
      return loadEmbedded();
    },
  };
}
