// A model downloaded from a folder URL in the worker: config.json and tokenizer.json first, each within a byte cap
// (the config decides whether the weights can fit before they are asked for; a folder without tokenizer.json
// loads a model that takes token ids), then model.safetensors (or the index and its shards,
// src/worker/url-shards.ts, one after another) streamed onto the GPU with progress every MiB (or 1 % of a small
// download), never more bytes than the size the viewer agreed to (LoadOptions.expectBytes) or the server
// announced, within the connect and idle timeouts (src/run/hub-fetch.ts); and a way to download the weights
// again after a device loss.
import type { Engine } from '../engine/engine';
import { parseModelConfigText } from '../model/model-config';
import { modelNameOfUrl } from '../run/hub';
import { netLimits } from '../run/hub-fetch';
import type { LoadedModel, LoadOptions, LoadProgress } from './api';
import { notify, workerError } from './boundary';
import { loadStream } from './install-model';
import { loadShards } from './shard-load';
import {
  contentLength,
  decodeText,
  fetchFile,
  folderUrl,
  MODEL_FILES,
  openFile,
  readBody,
} from './url-fetch';
import { bodyChunks, type NetInit, openWeights } from './url-shards';

/** At most one progress message per this many bytes (plus one at the end of each file). */
const PROGRESS_STEP = 1 << 20;

/** A file of a URL model downloaded again, as chunks (a reload after a device loss), within the same bounds. */
async function* downloadAgain(
  base: URL,
  file: string,
  net: NetInit,
  listed: number | undefined,
): AsyncGenerator<Uint8Array, void> {
  const res = await openFile(base, file, { limits: net.limits });
  yield* bodyChunks(res, file, undefined, listed);
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
  const net: NetInit = { signal, limits: options?.net };
  const limits = netLimits(options?.net);
  const listed = options?.expectBytes ?? {};
  // A small file is read to its listed size when the viewer agreed to one (the Hub's listing), else to its cap.
  const bound = (file: string, cap: number) =>
    typeof listed[file] === 'number' ? { listed: listed[file] } : { max: cap };
  // The two small files first: config.json decides whether the weights can fit before they are asked for.
  // tokenizer.json may be absent: the model then takes token ids.
  const [cfgRes, tok] = await Promise.all([
    openFile(base, MODEL_FILES.config, net),
    fetchFile(base, MODEL_FILES.tokenizer, net),
  ]);
  const tokRes = 'res' in tok ? tok.res : null;
  const small = [contentLength(cfgRes), tokRes ? contentLength(tokRes) : 0];
  const count = (file: string) => (n: number) => {
    loadedBytes += n;
    report(file);
  };
  const config = decodeText(
    MODEL_FILES.config,
    await readBody(
      cfgRes,
      MODEL_FILES.config,
      bound(MODEL_FILES.config, limits.configBytes),
      count(MODEL_FILES.config),
      signal,
    ),
  );
  const tokenizer = tokRes
    ? decodeText(
        MODEL_FILES.tokenizer,
        await readBody(
          tokRes,
          MODEL_FILES.tokenizer,
          bound(MODEL_FILES.tokenizer, limits.tokenizerBytes),
          count(MODEL_FILES.tokenizer),
          signal,
        ),
      )
    : undefined;
  const refusal = await engine.refusalFor(parseModelConfigText(config));
  if (refusal) throw workerError('model', `${refusal}; nothing was downloaded`);
  const w = await openWeights(base, net, options?.expectFiles !== undefined, listed);
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
  const wListed = listed[MODEL_FILES.weights];
  const wLen = wListed ?? contentLength(wRes);
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
      weights: bodyChunks(wRes, MODEL_FILES.weights, signal, wListed),
      totalBytes: wLen,
      onProgress: (loaded) => {
        loadedBytes = before + loaded;
        report(MODEL_FILES.weights);
      },
      onDownloaded: () =>
        notify(onProgress, { file: 'gpu', loadedBytes, totalBytes: totalBytes ?? loadedBytes }),
      signal,
      reopen: () => downloadAgain(base, MODEL_FILES.weights, net, wListed ?? wLen ?? undefined),
    },
    options,
    keepLoaded,
  );
}
