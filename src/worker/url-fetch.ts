// Fetching a model folder's files over http(s): the folder URL checked, a file opened (redirects followed,
// errors and HTML refused) or fetched whole, its announced size, its text. The leaf of the worker's network code
// (url-model.ts and url-shards.ts both build on it).
import type { WorkerError } from './api';

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
