// Fetching a model folder's files over http(s): the folder URL checked, a file opened (redirects followed,
// errors and HTML refused) within the connect timeout, its body read within a byte cap or its listed size and the
// idle timeout (src/run/hub-fetch.ts, the same bounds as the CLI's), its text. The leaf of the worker's network
// code (url-model.ts and url-shards.ts both build on it).
import {
  type BodyBound,
  bodyWithin,
  contentLength,
  fetchWithin,
  HubError,
  type NetLimits,
  type NetResponse,
  netLimits,
} from '../run/hub-fetch';
import type { WorkerError } from './api';

export { contentLength };

export const MODEL_FILES = {
  config: 'config.json',
  weights: 'model.safetensors',
  tokenizer: 'tokenizer.json',
} as const;

export const fail = (kind: WorkerError['kind'], message: string): WorkerError => ({ kind, message });
export const why = (e: unknown) => (e instanceof Error ? e.message : String(e));

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

export interface FileInit {
  method?: 'GET' | 'HEAD';
  signal?: AbortSignal;
  range?: [number, number];
  /** The bounds of the request and its body (tests shorten the timeouts). */
  limits?: Partial<NetLimits>;
}

/** Each answer's request, so that its body is read within the same bounds (and stopped with it). */
const requests = new WeakMap<Response, NetResponse>();

/** Fetches `file` under `base` (redirects followed, as the Hub's LFS files need); refuses errors and HTML. */
export async function openFile(base: URL, file: string, init: FileInit = {}): Promise<Response> {
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
  init: FileInit = {},
): Promise<{ res: Response } | { missing: string }> {
  const url = new URL(file, base).href;
  let r: NetResponse;
  try {
    r = await fetchWithin(
      url,
      file,
      { signal: init.signal, limits: init.limits },
      {
        method: init.method ?? 'GET',
        ...(init.range ? { headers: { Range: `bytes=${init.range[0]}-${init.range[1] - 1}` } } : {}),
      },
    );
  } catch (e) {
    if (init.signal?.aborted) throw e;
    // A CORS refusal and a dead host look the same from here (a TypeError): say both.
    if (e instanceof HubError && e.reason === 'unreachable')
      throw fail('model', `${e.message}; is the host up, and does it allow CORS?`);
    throw asModelError(e);
  }
  const res = r.res;
  requests.set(res, r);
  if (res.status === 404 || res.status === 410) {
    res.body?.cancel().catch(() => undefined);
    return { missing: `${file}: HTTP ${res.status} ${res.statusText || 'Not Found'} for ${url}` };
  }
  if (!res.ok) {
    res.body?.cancel().catch(() => undefined);
    const code = res.status === 429 ? ' (the server is limiting requests: try again later)' : '';
    throw fail('model', `${file}: HTTP ${res.status} ${res.statusText}${code} for ${url}`);
  }
  // A static host's SPA fallback answers a missing file with index.html and status 200.
  if ((res.headers.get('content-type') ?? '').includes('text/html')) {
    res.body?.cancel().catch(() => undefined);
    return { missing: `${file}: not found at ${url} (the server answered with an HTML page)` };
  }
  return { res };
}

/** A bounded read's HubError as the worker's error (kind 'model': the file or its server); others as they are. */
export function asModelError(e: unknown): unknown {
  return e instanceof HubError ? fail(e.kind === 'input' ? 'input' : 'model', e.message) : e;
}

/** The chunks of an answer's body within `bound` and the idle timeout (see run/hub-fetch.ts bodyWithin). */
export async function* bodyOf(
  res: Response,
  file: string,
  bound: BodyBound,
  signal?: AbortSignal,
): AsyncGenerator<Uint8Array, void> {
  const r = requests.get(res) ?? {
    res,
    stop: new AbortController(),
    limits: netLimits(undefined),
    url: file,
  };
  try {
    yield* bodyWithin(r, file, bound, signal);
  } catch (e) {
    throw asModelError(e);
  }
}

/** Reads a small body to the end, at most `max` bytes (or exactly its listed size), reporting each chunk's size. */
export async function readBody(
  res: Response,
  file: string,
  bound: number | BodyBound,
  onBytes: (n: number) => void,
  signal?: AbortSignal,
): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of bodyOf(res, file, typeof bound === 'number' ? { max: bound } : bound, signal)) {
    parts.push(c);
    n += c.length;
    onBytes(c.length);
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function decodeText(file: string, bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw fail('model', `${file}: not valid UTF-8 text`);
  }
}
