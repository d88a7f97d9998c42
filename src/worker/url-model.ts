// Model files from the network (and large files from disk) without ever holding model.safetensors whole: the
// size before the download (HEAD), the memory budget checked from config.json before the weights are asked
// for, and the weights hashed chunk by chunk (incremental sha256) on their way into the streaming loader, kept
// as a Blob for the IndexedDB cache. Used by the engine worker; nothing here touches the GPU.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { estimateWeightBytes } from '../engine/engine';
import { parseConfigText } from '../model/config';
import { ModelLoadError } from '../model/errors';
import { modelSummary } from '../model/weights';
import type { NeoXConfig } from '../numeric/types';
import type { UrlProbe, WorkerError } from './api';
import { probeWeights } from './url-shards';

export const MODEL_FILES = {
  config: 'config.json',
  weights: 'model.safetensors',
  tokenizer: 'tokenizer.json',
} as const;

const fail = (kind: WorkerError['kind'], message: string): WorkerError => ({ kind, message });
const why = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** An absolute http(s) folder URL ending in '/', or a WorkerError of kind 'input'. */
export function folderUrl(baseUrl: string): URL {
  let base: URL;
  try {
    base = new URL(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  } catch {
    throw fail('input', `not an absolute URL: ${JSON.stringify(baseUrl.slice(0, 200))}`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:')
    throw fail('input', `only http(s) URLs can be loaded, not ${base.protocol}`);
  return base;
}

/** Fetches `file` under `base` (redirects followed, as the Hub's LFS files need); refuses errors and HTML. */
export async function openFile(
  base: URL,
  file: string,
  init: { method?: 'GET' | 'HEAD'; signal?: AbortSignal; range?: [number, number] } = {},
): Promise<Response> {
  const r = await fetchFile(base, file, init);
  if ('missing' in r) throw fail('model', r.missing);
  return r.res;
}

/**
 * Like openFile, but a file that is not there (404 or 410, or a static host's HTML fallback) is `missing`,
 * with the line openFile would throw.
 */
export async function fetchFile(
  base: URL,
  file: string,
  init: { method?: 'GET' | 'HEAD'; signal?: AbortSignal; range?: [number, number] } = {},
): Promise<{ res: Response } | { missing: string }> {
  const url = new URL(file, base).href;
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method ?? 'GET',
      signal: init.signal,
      redirect: 'follow',
      ...(init.range ? { headers: { Range: `bytes=${init.range[0]}-${init.range[1] - 1}` } } : {}),
    });
  } catch (e) {
    if (init.signal?.aborted) throw e;
    // A CORS refusal and a dead host look the same from here (a TypeError): say both.
    throw fail(
      'model',
      `${file}: could not fetch ${url} (${why(e)}; is the host up, and does it allow CORS?)`,
    );
  }
  if (res.status === 404 || res.status === 410) {
    res.body?.cancel().catch(() => undefined);
    return { missing: `${file}: HTTP ${res.status} ${res.statusText || 'Not Found'} for ${url}` };
  }
  if (!res.ok) throw fail('model', `${file}: HTTP ${res.status} ${res.statusText} for ${url}`);
  // A static host's SPA fallback answers a missing file with index.html and status 200.
  if ((res.headers.get('content-type') ?? '').includes('text/html')) {
    res.body?.cancel().catch(() => undefined);
    return { missing: `${file}: not found at ${url} (the server answered with an HTML page)` };
  }
  return { res };
}

/** The body's size from Content-Length (null when absent, malformed, or the body is encoded). */
export function contentLength(res: Response): number | null {
  const v = res.headers.get('content-length');
  if (v === null || res.headers.get('content-encoding')) return null;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/** Reads a (small) body to the end, reporting each chunk's size. */
export async function readBody(res: Response, onBytes: (n: number) => void): Promise<Uint8Array> {
  const bytes = new Uint8Array(await res.arrayBuffer());
  onBytes(bytes.length);
  return bytes;
}

export function decodeText(file: string, bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw fail('model', `${file}: not valid UTF-8 text`);
  }
}

/** The least GPU memory the model's weights can take: matrices in fp16 (what the engine picks when lossless). */
export function minWeightBytes(cfg: NeoXConfig): number {
  return estimateWeightBytes(cfg, true);
}

const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;

/** One line refusing a model that cannot fit the budget even with fp16 weights, or null when it may fit. */
export function budgetRefusal(cfg: NeoXConfig, budgetBytes: number): string | null {
  const need = minWeightBytes(cfg);
  if (need <= budgetBytes) return null;
  return (
    `the model needs at least ${gib(need)} of GPU memory for its weights (in fp16), more than the ` +
    `${gib(budgetBytes)} budget for this adapter; nothing was downloaded`
  );
}

function parseConfigOrFail(text: string): NeoXConfig {
  try {
    return parseConfigText(text);
  } catch (e) {
    if (e instanceof ModelLoadError) throw fail('model', e.message);
    throw fail('model', `config.json: ${why(e)}`);
  }
}

/**
 * What a URL model costs before it is downloaded: each file's size (HEAD, redirects followed; null where the
 * server does not say), config.json read (it is small) for the parameter count and the GPU memory it needs.
 */
export async function probeModelUrl(
  baseUrl: string,
  budgetBytes: number | null,
  refusalFor: (cfg: NeoXConfig) => Promise<string | null> = async (cfg) =>
    budgetBytes === null ? null : budgetRefusal(cfg, budgetBytes),
): Promise<UrlProbe> {
  const base = folderUrl(baseUrl);
  const names = [MODEL_FILES.config, MODEL_FILES.tokenizer];
  const heads = await Promise.all(names.map((f) => openFile(base, f, { method: 'HEAD' })));
  const files = [
    ...names.map((file, i) => ({ file, bytes: contentLength(heads[i]) })),
    ...(await probeWeights(base)),
  ];
  const cfgRes = await openFile(base, MODEL_FILES.config);
  const cfg = parseConfigOrFail(decodeText(MODEL_FILES.config, new Uint8Array(await cfgRes.arrayBuffer())));
  const total = files.every((f) => f.bytes !== null) ? files.reduce((a, f) => a + (f.bytes ?? 0), 0) : null;
  return {
    files,
    totalBytes: total,
    params: modelSummary(cfg).params,
    minGpuBytes: minWeightBytes(cfg),
    budgetBytes,
    refusal: await refusalFor(cfg),
  };
}

/** Collects chunks into a Blob as they pass (the browser may keep a large Blob on disk, not in memory). */
export class BlobCollector {
  private blob = new Blob([]);
  private pending: Uint8Array<ArrayBuffer>[] = [];
  private pendingBytes = 0;
  constructor(private readonly flushBytes = 16 << 20) {}
  add(chunk: Uint8Array): void {
    this.pending.push(chunk.slice()); // an own copy: the reader may reuse its buffer
    this.pendingBytes += chunk.length;
    if (this.pendingBytes >= this.flushBytes) this.flush();
  }
  private flush(): void {
    this.blob = new Blob([this.blob, ...this.pending]);
    this.pending = [];
    this.pendingBytes = 0;
  }
  finish(): Blob {
    this.flush();
    return this.blob;
  }
}

/**
 * Passes a stream's chunks through unchanged while hashing them (sha256, incrementally) and handing each to
 * `keep`; at the end calls `onEnd(hex)`, which may throw (a mismatch): the consumer then sees that error
 * instead of the end, before it can use what it read. Stopping early (return()) cancels the source.
 */
export async function* hashChunks(
  source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  onEnd: (sha256Hex: string, bytes: number) => void,
  keep?: (chunk: Uint8Array) => void,
): AsyncGenerator<Uint8Array, void, undefined> {
  const h = sha256.create();
  let bytes = 0;
  if (typeof (source as ReadableStream<Uint8Array>).getReader === 'function') {
    const reader = (source as ReadableStream<Uint8Array>).getReader();
    let done = false;
    try {
      for (;;) {
        const r = await reader.read();
        if (r.done) break;
        h.update(r.value);
        bytes += r.value.length;
        keep?.(r.value);
        yield r.value;
      }
      done = true;
    } finally {
      if (!done) reader.cancel().catch(() => undefined);
      try {
        reader.releaseLock();
      } catch {
        // a read still pending on an errored stream: the stream is finished either way
      }
    }
  } else {
    for await (const c of source as AsyncIterable<Uint8Array>) {
      h.update(c);
      bytes += c.length;
      keep?.(c);
      yield c;
    }
  }
  onEnd(bytesToHex(h.digest()), bytes);
}

/** The 'model-mismatch' error: the weights are not the ones a run (or a preset) names. */
export function mismatchError(actual: string, expected: string): WorkerError {
  return fail(
    'model-mismatch',
    `model.safetensors hashes to sha256 ${actual.slice(0, 16)}…, but the run names ${expected.slice(0, 16)}…: ` +
      'these are not the weights it was made with, so nothing was loaded.',
  );
}
