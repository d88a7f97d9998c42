// A model's weights into the engine from the worker, checked by sha256: bytes hashed whole before they reach
// the engine, or a stream hashed on its way in and checked when it ends, before the engine installs it (so a
// refused file leaves the model loaded before in place); then kept in IndexedDB when asked. A stream's source
// can be read again (the Blob, a new download), which is where a device loss reloads the model from. `onLoaded` sees
// the new model as soon as the engine holds it, before the cache write.
import type { Engine } from '../engine/engine';
import { cacheModelFiles } from '../run/history';
import type { LoadedModel, LoadOptions } from './api';
import { workerError } from './boundary';
import { BlobCollector, hashChunks, mismatchError } from './url-model';

/** Lower-case hex SHA-256 (WebGPU needs a secure context, so crypto.subtle is there whenever a GPU is). */
async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Streams model.safetensors into the engine, hashing it on the way; the hash is checked when the stream
 * ends, before the engine installs the model, so a refused file leaves the model loaded before in place.
 */
export async function loadStream(
  engine: Engine,
  f: {
    config: string;
    tokenizer: string | undefined;
    name: string;
    weights: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
    totalBytes: number | null;
    onProgress?: (loaded: number) => void;
    onDownloaded?: () => void;
    signal?: AbortSignal;
    /**
     * The same file again from its start (the Blob, or a new download): a device loss reloads the model from
     * there, hashed again and refused unless it is the same file.
     */
    reopen?: () => ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
  },
  options: LoadOptions | undefined,
  onLoaded: (m: LoadedModel) => void,
): Promise<LoadedModel> {
  const expected = options?.expectSha256;
  const kept = options?.cache ? new BlobCollector() : null;
  let sha256 = '';
  let weightsBytes = 0;
  const source = hashChunks(
    f.weights,
    (hex, bytes) => {
      sha256 = hex;
      weightsBytes = bytes;
      if (typeof expected === 'string' && expected !== hex) throw mismatchError(hex, expected);
      f.onDownloaded?.();
    },
    kept ? (c) => kept.add(c) : undefined,
  );
  const info = await engine.loadModelStream({
    config: f.config,
    tokenizer: f.tokenizer,
    name: f.name,
    weights: source,
    totalBytes: f.totalBytes,
    onProgress: f.onProgress,
    signal: f.signal,
    reopen: f.reopen
      ? () =>
          hashChunks(f.reopen!(), (hex) => {
            if (hex !== sha256) throw mismatchError(hex, sha256);
          })
      : undefined,
  });
  const loaded: LoadedModel = { ...info, sha256, weightsBytes };
  onLoaded(loaded);
  if (kept) {
    try {
      await cacheModelFiles(
        sha256,
        { config: f.config, weights: kept.finish(), tokenizer: f.tokenizer },
        f.name,
        { hashed: true },
      );
    } catch {
      // No IndexedDB, or over quota: the model runs, it is only not kept for the next visit.
    }
  }
  return loaded;
}

export async function loadBytes(
  engine: Engine,
  config: string,
  weights: Uint8Array,
  tokenizer: string | undefined,
  name: string,
  options: LoadOptions | undefined,
  onLoaded: (m: LoadedModel) => void,
): Promise<LoadedModel> {
  const sha256 = await sha256Hex(weights);
  const expected = options?.expectSha256;
  // Checked before anything reaches the engine: a refused model leaves the one loaded before in place.
  if (typeof expected === 'string' && expected !== sha256) {
    throw workerError(
      'model-mismatch',
      `model.safetensors hashes to sha256 ${sha256.slice(0, 16)}…, but the run names ${expected.slice(0, 16)}…: ` +
        'these are not the weights it was made with, so nothing was loaded.',
    );
  }
  const weightsBytes = weights.byteLength;
  const info = await engine.loadModel({ config, weights, tokenizer, name });
  const loaded: LoadedModel = { ...info, sha256, weightsBytes };
  onLoaded(loaded);
  if (options?.cache) {
    try {
      await cacheModelFiles(sha256, { config, weights, tokenizer }, name);
    } catch {
      // No IndexedDB, or over quota: the model runs, it is only not kept for the next visit.
    }
  }
  return loaded;
}
