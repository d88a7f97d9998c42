// A model downloaded from a folder URL in the worker: config.json and tokenizer.json first (the config decides
// whether the weights can fit before they are asked for), then model.safetensors (or the index and its shards,
// src/worker/url-shards.ts, one after another) streamed onto the GPU with
// progress every MiB (or 1 % of a small download), and a way to download the weights again after a device loss.
import type { Engine } from '../engine/engine';
import { parseConfigText } from '../model/config';
import { modelNameOfUrl } from '../run/hub';
import type { LoadedModel, LoadOptions, LoadProgress } from './api';
import { notify, workerError } from './boundary';
import { loadStream } from './install-model';
import { loadShards } from './shard-load';
import { contentLength, decodeText, folderUrl, MODEL_FILES, openFile, readBody } from './url-fetch';
import { bodyChunks, openWeights } from './url-shards';

/** At most one progress message per this many bytes (plus one at the end of each file). */
const PROGRESS_STEP = 1 << 20;

/** A file of a URL model downloaded again, as chunks (a reload after a device loss). */
async function* downloadAgain(base: URL, file: string): AsyncGenerator<Uint8Array, void> {
  const res = await openFile(base, file);
  const body = res.body ?? new Blob([await res.arrayBuffer()]).stream();
  const reader = body.getReader();
  let done = false;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      yield r.value;
    }
    done = true;
  } finally {
    if (!done) reader.cancel().catch(() => undefined);
  }
}

/** Downloads the model in folder `baseUrl` and installs it; `keepLoaded` sees it once the engine holds it. */
export async function downloadModel(
  engine: Engine,
  baseUrl: string,
  onProgress: (p: LoadProgress) => void,
  signal: AbortSignal,
  options: LoadOptions | undefined,
  keepLoaded: (m: LoadedModel) => void,
): Promise<LoadedModel> {
  const base = folderUrl(baseUrl);
  let loadedBytes = 0;
  let totalBytes: number | null = null;
  let lastReport = -PROGRESS_STEP;
  // Every 1 MiB, or every 1 % of a small download (at least 64 KiB), so a slow one is seen to move.
  const step = () =>
    totalBytes === null ? PROGRESS_STEP : Math.min(PROGRESS_STEP, Math.max(1 << 16, totalBytes / 100));
  const report = (file: string, force = false) => {
    if (force || loadedBytes - lastReport >= step()) {
      lastReport = loadedBytes;
      notify(onProgress, { file, loadedBytes, totalBytes });
    }
  };
  // The two small files first: config.json decides whether the weights can fit before they are asked for.
  const [cfgRes, tokRes] = await Promise.all([
    openFile(base, MODEL_FILES.config, { signal }),
    openFile(base, MODEL_FILES.tokenizer, { signal }),
  ]);
  const small = [contentLength(cfgRes), contentLength(tokRes)];
  const count = (file: string) => (n: number) => {
    loadedBytes += n;
    report(file);
  };
  const config = decodeText(MODEL_FILES.config, await readBody(cfgRes, count(MODEL_FILES.config)));
  const tokenizer = decodeText(MODEL_FILES.tokenizer, await readBody(tokRes, count(MODEL_FILES.tokenizer)));
  const refusal = await engine.refusalFor(parseConfigText(config));
  if (refusal) throw workerError('model', `${refusal}; nothing was downloaded`);
  const w = await openWeights(base, signal, options?.expectFiles !== undefined);
  if (w.kind === 'sharded') {
    // The index is small and read; the shards' sizes come from their headers (ranged reads).
    const small0 = small.reduce<number>((a, l) => a + (l ?? 0), 0) + w.indexBytes;
    loadedBytes += w.indexBytes;
    return await loadShards(
      engine,
      {
        config,
        tokenizer,
        name: modelNameOfUrl(base.href),
        source: w.source,
        onProgress: (loaded, total, file) => {
          totalBytes = total === null ? null : small0 + total;
          loadedBytes = small0 + loaded;
          report(file);
        },
        onDownloaded: () =>
          notify(onProgress, { file: 'gpu', loadedBytes, totalBytes: totalBytes ?? loadedBytes }),
        signal,
      },
      options,
      keepLoaded,
    );
  }
  const wRes = w.res;
  const wLen = contentLength(wRes);
  totalBytes = [...small, wLen].some((l) => l === null)
    ? null
    : [...small, wLen].reduce<number>((a, l) => a + (l ?? 0), 0);
  const before = loadedBytes;
  report(MODEL_FILES.weights, true);
  return await loadStream(
    engine,
    {
      config,
      tokenizer,
      name: modelNameOfUrl(base.href),
      weights: bodyChunks(wRes, MODEL_FILES.weights, signal),
      totalBytes: wLen,
      onProgress: (loaded) => {
        loadedBytes = before + loaded;
        report(MODEL_FILES.weights);
      },
      onDownloaded: () =>
        notify(onProgress, { file: 'gpu', loadedBytes, totalBytes: totalBytes ?? loadedBytes }),
      signal,
      reopen: () => downloadAgain(base, MODEL_FILES.weights),
    },
    options,
    keepLoaded,
  );
}
