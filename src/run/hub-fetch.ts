// Bounded reads over the network, the same in the page's worker and the CLI: an answer must start within a
// connect timeout, a body must not stall longer than an idle timeout, a body read whole (config.json,
// tokenizer.json, a shard index, an API answer) is cut at a byte cap, and a listed file (a size from the Hub's
// tree listing or a Content-Length) is refused at the first byte past its size and on a shortfall. The Hub's
// error answers (X-Error-Code: GatedRepo, RepoNotFound, RevisionNotFound, EntryNotFound; HTTP 429) become one
// line each. Every failure is a HubError: 'model' for what the Hub says of the repository (exit 2 in the CLI),
// 'network' for the network or a Hub that answered wrongly (exit 4). A caller's AbortSignal passes through as
// the abort it is (the caller says "cancelled").

/** What went wrong: the request ('input'), the repository or its files ('model'), the network ('network'). */
export type HubErrorKind = 'input' | 'model' | 'network';

/** Why a read failed, for code that adds advice (never parse the message). */
export type HubErrorReason =
  | 'unreachable'
  | 'timeout'
  | 'stalled'
  | 'broken'
  | 'too-large'
  | 'short'
  | 'answer';

export class HubError extends Error {
  override name = 'HubError';
  constructor(
    readonly kind: HubErrorKind,
    message: string,
    readonly reason: HubErrorReason = 'answer',
  ) {
    super(message.replace(/\s+/g, ' '));
  }
}

/** The bounds of every read. Tests shorten the timeouts; the caps are what a real file needs, with room. */
export interface NetLimits {
  /** Longest wait for an answer's status and headers, ms. */
  connectMs: number;
  /** Longest wait between two pieces of a body, ms. */
  idleMs: number;
  /** config.json, read whole. */
  configBytes: number;
  /** tokenizer.json, read whole (real ones reach 33 MB). */
  tokenizerBytes: number;
  /** model.safetensors.index.json, read whole (the largest on the Hub are about 1 MB; from disk 32 MiB). */
  indexBytes: number;
  /** One answer of the Hub's API (revision info, one page of a tree listing). */
  apiBytes: number;
  /** Pages of a tree listing followed (Link: rel="next"). */
  maxPages: number;
  /** Entries of a tree listing, all pages together. */
  maxEntries: number;
}

export const NET_LIMITS: NetLimits = {
  connectMs: 30_000,
  idleMs: 30_000,
  configBytes: 1 << 20,
  tokenizerBytes: 64 << 20,
  indexBytes: 4 << 20,
  apiBytes: 4 << 20,
  maxPages: 50,
  maxEntries: 20_000,
};

export interface NetOptions {
  fetch?: typeof fetch;
  signal?: AbortSignal;
  limits?: Partial<NetLimits>;
}

/** The limits with the caller's overrides (only finite positive numbers taken). */
export function netLimits(l: Partial<NetLimits> | undefined): NetLimits {
  const out = { ...NET_LIMITS };
  for (const k of Object.keys(NET_LIMITS) as (keyof NetLimits)[]) {
    const v = l?.[k];
    if (typeof v === 'number' && Number.isFinite(v) && v > 0) out[k] = v;
  }
  return out;
}

const why = (e: unknown) => (e instanceof Error ? e.message : String(e));
const secs = (ms: number) => `${ms >= 10_000 ? Math.round(ms / 1000) : (ms / 1000).toFixed(1)} s`;

/** Bytes in words: 1.0 MiB, 2.0 KiB, 17 bytes. */
export function bytesText(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(1)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} byte${n === 1 ? '' : 's'}`;
}

/** Text from a server for a message: one line, printable ASCII, at most 200 characters. */
export function serverText(s: string | null | undefined): string {
  const t = (s ?? '')
    .replace(/[^\x20-\x7e]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return t.length > 200 ? `${t.slice(0, 200)}…` : t;
}

/** An answer whose body has not been read yet, with the controller that stops it. */
export interface NetResponse {
  res: Response;
  /** Aborting it stops the request and its body (the caller's signal does too). */
  stop: AbortController;
  limits: NetLimits;
  url: string;
}

function linked(signal: AbortSignal | undefined): AbortController {
  const c = new AbortController();
  if (signal) {
    if (signal.aborted) c.abort(signal.reason);
    else signal.addEventListener('abort', () => c.abort(signal.reason), { once: true });
  }
  return c;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/**
 * A request whose answer (status and headers) must come within `connectMs`; redirects followed. `what` names it
 * in messages (a file, "the Hub's API"). A caller's abort is thrown as it is.
 */
export async function fetchWithin(
  url: string,
  what: string,
  o: NetOptions,
  init: { method?: 'GET' | 'HEAD'; headers?: Record<string, string> } = {},
): Promise<NetResponse> {
  const limits = netLimits(o.limits);
  const stop = linked(o.signal);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stop.abort(new Error('timeout'));
  }, limits.connectMs);
  try {
    const res = await (o.fetch ?? fetch)(url, {
      method: init.method ?? 'GET',
      headers: init.headers,
      redirect: 'follow',
      signal: stop.signal,
    });
    return { res, stop, limits, url };
  } catch (e) {
    if (o.signal?.aborted) throw e;
    if (timedOut)
      throw new HubError(
        'network',
        `${what}: ${originOf(url)} did not answer in ${secs(limits.connectMs)}`,
        'timeout',
      );
    throw new HubError('network', `${what}: could not reach ${originOf(url)} (${why(e)})`, 'unreachable');
  } finally {
    clearTimeout(timer);
  }
}

/** How a body is bounded: cut at `max` bytes (a file read whole), or exactly `listed` bytes (a listed file). */
export type BodyBound = { max: number } | { listed: number; from?: string };

/**
 * The chunks of a body, each read within the idle timeout; past the bound the request is stopped at once and
 * one line says why; a listed file that ends short is refused too. Stopping early (return()) stops the request.
 */
export async function* bodyWithin(
  r: NetResponse,
  what: string,
  bound: BodyBound,
  signal?: AbortSignal,
): AsyncGenerator<Uint8Array, void> {
  const body = r.res.body;
  let bytes = 0;
  // A listed file whose server announces another size is refused before a byte is read.
  const announced = contentLength(r.res);
  if ('listed' in bound && announced !== null && announced !== bound.listed && r.res.status === 200) {
    discard(r);
    throw new HubError(
      'network',
      `${what}: the server announces ${bytesText(announced)}, not the ${bytesText(bound.listed)} ${bound.from ?? 'listed'}: refused before the download`,
      announced > bound.listed ? 'too-large' : 'short',
    );
  }
  const over = (n: number): HubError =>
    'max' in bound
      ? new HubError(
          'network',
          `${what}: the server sent more than ${bytesText(bound.max)}, the most read of it: cut there (not a ${what} this app reads)`,
          'too-large',
        )
      : new HubError(
          'network',
          `${what}: the server sent more than the ${bytesText(bound.listed)} ${bound.from ?? 'listed'} (${bytesText(n)} by the time it was stopped): refused, nothing was kept`,
          'too-large',
        );
  if (!body) {
    const b = new Uint8Array(await r.res.arrayBuffer());
    if ('max' in bound ? b.length > bound.max : b.length > bound.listed) throw over(b.length);
    if ('listed' in bound && b.length < bound.listed) throw short(what, b.length, bound.listed);
    yield b;
    return;
  }
  const reader = body.getReader();
  let done = false;
  try {
    for (;;) {
      let stalled = false;
      const timer = setTimeout(() => {
        stalled = true;
        r.stop.abort(new Error('stalled'));
      }, r.limits.idleMs);
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch (e) {
        if (signal?.aborted) throw e;
        if (stalled)
          throw new HubError(
            'network',
            `${what}: the download stalled (no byte for ${secs(r.limits.idleMs)} after ${bytesText(bytes)}): stopped, nothing was kept`,
            'stalled',
          );
        throw new HubError(
          'network',
          `${what}: the download broke off after ${bytes} bytes (${why(e)}); nothing was kept`,
          'broken',
        );
      } finally {
        clearTimeout(timer);
      }
      if (next.done) break;
      bytes += next.value.length;
      const cap = 'max' in bound ? bound.max : bound.listed;
      if (bytes > cap) {
        r.stop.abort(new Error('too large'));
        throw over(bytes);
      }
      yield next.value;
    }
    done = true;
  } finally {
    if (!done) {
      reader.cancel().catch(() => undefined);
      r.stop.abort(new Error('stopped'));
    }
  }
  if ('listed' in bound && bytes < bound.listed) throw short(what, bytes, bound.listed);
}

function short(what: string, got: number, listed: number): HubError {
  return new HubError(
    'network',
    `${what}: cut short: the server sent ${bytesText(got)} of the ${bytesText(listed)} listed; nothing was kept`,
    'short',
  );
}

/** A body read whole, at most `max` bytes. */
export async function readWithin(r: NetResponse, what: string, max: number, signal?: AbortSignal) {
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of bodyWithin(r, what, { max }, signal)) {
    parts.push(c);
    n += c.length;
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The body's size from Content-Length (null when absent, malformed, or the body is encoded). */
export function contentLength(res: Response): number | null {
  const v = res.headers.get('content-length');
  if (v === null || res.headers.get('content-encoding')) return null;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/** UTF-8 text, strictly. */
export function utf8(what: string, bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new HubError('network', `${what}: not valid UTF-8 text`);
  }
}

/** Drops an answer's body unread (an error answer, a HEAD). */
export function discard(r: NetResponse): void {
  r.res.body?.cancel().catch(() => undefined);
  r.stop.abort(new Error('done'));
}

/** Where an error answer came from: which repository, revision and file it was about. */
export interface AskedFor {
  repo: string;
  revision?: string;
  /** A file of the repository (config.json), or undefined for the API. */
  file?: string;
}

/**
 * One line for an error answer of the Hub, from its status and X-Error-Code / X-Error-Message: gated,
 * no such repository, revision or file, rate-limited, or the status. Drops the body.
 */
export function hubAnswerError(r: NetResponse, asked: AskedFor): HubError {
  const { res } = r;
  discard(r);
  const code = serverText(res.headers.get('x-error-code'));
  const msg = serverText(res.headers.get('x-error-message'));
  const at = asked.revision ? `${asked.repo}@${asked.revision}` : asked.repo;
  const said = msg ? `: the Hub says "${msg}"` : '';
  if (code === 'GatedRepo')
    return new HubError(
      'model',
      `${asked.repo} is a gated repository (HTTP ${res.status})${said || ': ask for access on its page'}; the explorer sends no token`,
    );
  if (res.status === 429) {
    const after = serverText(res.headers.get('retry-after'));
    return new HubError(
      'network',
      `the Hub is limiting requests (HTTP 429${/^\d{1,6}$/.test(after) ? `, retry after ${after} s` : ''}): try again later`,
    );
  }
  if (code === 'RevisionNotFound')
    return new HubError(
      'model',
      `${asked.repo} has no revision ${JSON.stringify(asked.revision ?? '')} (no such branch, tag or commit)`,
    );
  if (code === 'EntryNotFound' || (asked.file && res.status === 404))
    return new HubError(
      'model',
      `${at}: ${asked.file ?? 'the file'} is not there (HTTP ${res.status}${code ? ` ${code}` : ''})`,
    );
  if (code === 'RepoNotFound' || res.status === 401 || res.status === 404)
    return new HubError('model', `${asked.repo}: no such repository on the Hub, or it is private`);
  if (res.status === 403)
    return new HubError(
      'model',
      `${at}${asked.file ? ` ${asked.file}` : ''}: access refused (HTTP 403)${said}`,
    );
  return new HubError(
    'network',
    `${at}${asked.file ? ` ${asked.file}` : ''}: the Hub answered HTTP ${res.status}${code ? ` ${code}` : ''}${said}`,
  );
}

/** A JSON answer of the Hub's API (capped at apiBytes); garbage is one line, not "could not reach". */
export async function apiJson(
  url: string,
  asked: AskedFor,
  o: NetOptions,
): Promise<{ json: unknown; res: Response }> {
  const what = "the Hub's API";
  const r = await fetchWithin(url, what, o, { headers: { Accept: 'application/json' } });
  if (!r.res.ok) throw hubAnswerError(r, asked);
  const bytes = await readWithin(r, what, r.limits.apiBytes, o.signal);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new HubError('network', `${what} answered ${asked.repo} with bytes that are not UTF-8 text`);
  }
  try {
    return { json: JSON.parse(text), res: r.res };
  } catch {
    throw new HubError(
      'network',
      `${what} answered ${asked.repo} with something that is not JSON (it starts ${JSON.stringify(serverText(text.slice(0, 40)))})`,
    );
  }
}

/** The URL of `rel="next"` in a Link header, or null. */
export function linkNext(link: string | null): string | null {
  if (!link) return null;
  for (const part of link.split(',')) {
    const m = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
    if (m && /(^|;)\s*rel\s*=\s*"?next"?\s*(;|$)/i.test(m[2])) return m[1];
  }
  return null;
}

/**
 * A listed file's bytes (after consent): GET within the connect timeout, each piece within the idle timeout,
 * refused at the first byte past `size` and when it ends short. An error answer is one line (hubAnswerError).
 */
export async function* fetchListed(
  url: string,
  path: string,
  size: number,
  asked: { repo: string; revision: string },
  o: NetOptions,
): AsyncGenerator<Uint8Array, void> {
  const r = await fetchWithin(url, path, o);
  if (!r.res.ok) throw hubAnswerError(r, { ...asked, file: path });
  yield* bodyWithin(r, path, { listed: size }, o.signal);
}
