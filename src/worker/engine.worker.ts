// The engine's Web Worker: one Engine per worker, exposed through comlink as a WorkerApi. Every failure
// leaves here as a plain WorkerError object ({ kind, message }), which comlink clones as-is.
import * as Comlink from 'comlink';
import { Engine, EngineError, type ModelInfo } from '../engine/engine';
import { DeviceLostError, GpuUnavailableError } from '../gpu/device';
import { browserShaderSource } from '../kernels/shaders-browser';
import { ModelLoadError } from '../model/errors';
import type {
  GenerateResult,
  InitResult,
  LoadProgress,
  TokenEvent,
  WorkerApi,
  WorkerError,
  WorkerErrorKind,
} from './api';

const MODEL_FILES = {
  config: 'config.json',
  weights: 'model.safetensors',
  tokenizer: 'tokenizer.json',
} as const;
/** At most one progress message per this many bytes (plus one at the end of each file). */
const PROGRESS_STEP = 1 << 20;

function workerError(kind: WorkerErrorKind, message: string): WorkerError {
  return { kind, message };
}

function isWorkerError(e: unknown): e is WorkerError {
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof (e as Record<string, unknown>).kind === 'string' &&
    typeof (e as Record<string, unknown>).message === 'string'
  );
}

/** Maps anything thrown inside the worker to the WorkerError that crosses the boundary. */
function toWorkerError(e: unknown): WorkerError {
  if (isWorkerError(e)) return { kind: e.kind, message: e.message };
  if (e instanceof GpuUnavailableError) return workerError('no-webgpu', e.message);
  if (e instanceof DeviceLostError) return workerError('device-lost', e.message);
  if (e instanceof ModelLoadError) return workerError('model', e.message);
  if (e instanceof EngineError) {
    const m = e.message;
    if (/cancelled/.test(m)) return workerError('cancelled', 'generation cancelled');
    if (/token|prompt|generation length|max_position_embeddings/.test(m)) return workerError('input', m);
    if (/no model is loaded|uploading the weights/.test(m)) return workerError('model', m);
    return workerError('internal', m);
  }
  if (e instanceof Error) return workerError('internal', `${e.name}: ${e.message}`);
  return workerError('internal', `unexpected failure: ${String(e)}`);
}

/** Calls a callback that may be a comlink proxy (returns a promise) without letting a rejection escape. */
function notify<T>(cb: (v: T) => void, v: T): void {
  try {
    const r: unknown = cb(v);
    if (r instanceof Promise) r.catch(() => undefined);
  } catch {
    // A broken progress listener must not break the work it listens to.
  }
}

/** Drops the MessagePort behind a proxied callback once it is no longer needed. */
function release(cb: unknown): void {
  const fn = (cb as Partial<Record<typeof Comlink.releaseProxy, unknown>>)[Comlink.releaseProxy];
  if (typeof fn === 'function') notify(() => fn.call(cb), undefined);
}

async function openFile(base: URL, file: string): Promise<Response> {
  const url = new URL(file, base).href;
  let res: Response;
  try {
    res = await fetch(url);
  } catch (e) {
    throw workerError(
      'model',
      `${file}: could not fetch ${url} (${e instanceof Error ? e.message : String(e)})`,
    );
  }
  if (!res.ok) throw workerError('model', `${file}: HTTP ${res.status} ${res.statusText} for ${url}`);
  // A static host's SPA fallback answers a missing file with index.html and status 200.
  if ((res.headers.get('content-type') ?? '').includes('text/html')) {
    throw workerError('model', `${file}: not found at ${url} (the server answered with an HTML page)`);
  }
  return res;
}

function contentLength(res: Response): number | null {
  const v = res.headers.get('content-length');
  if (v === null || res.headers.get('content-encoding')) return null;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/** Reads a body to the end, reporting each chunk's size. */
async function readBody(res: Response, onBytes: (n: number) => void): Promise<Uint8Array> {
  if (!res.body) {
    const bytes = new Uint8Array(await res.arrayBuffer());
    onBytes(bytes.length);
    return bytes;
  }
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.length;
    onBytes(value.length);
  }
  if (
    chunks.length === 1 &&
    chunks[0].byteOffset === 0 &&
    chunks[0].byteLength === chunks[0].buffer.byteLength
  ) {
    return chunks[0];
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function modelName(base: URL): string {
  const parts = base.pathname.split('/').filter((p) => p !== '');
  return decodeURIComponent(parts[parts.length - 1] ?? base.host);
}

class WorkerEngine implements WorkerApi {
  private engine: Engine | null = null;
  private initPromise: Promise<InitResult> | null = null;
  private busy: 'loading' | 'generating' | null = null;
  private abort: AbortController | null = null;

  init(): Promise<InitResult> {
    this.initPromise ??= Engine.create(navigator.gpu, browserShaderSource).then(
      (engine): InitResult => {
        this.engine = engine;
        return { ok: true, adapter: engine.adapter, features: engine.features };
      },
      (e: unknown): InitResult => ({ ok: false, error: toWorkerError(e) }),
    );
    return this.initPromise;
  }

  async loadModelFromUrl(baseUrl: string, onProgress: (p: LoadProgress) => void): Promise<ModelInfo> {
    try {
      const engine = await this.requireEngine();
      this.claim('loading');
      try {
        let base: URL;
        try {
          base = new URL(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
        } catch {
          throw workerError('input', `not an absolute URL: ${JSON.stringify(baseUrl)}`);
        }
        // Open all three at once so the total size is known before the first byte is counted.
        const [cfgRes, tokRes, wRes] = await Promise.all([
          openFile(base, MODEL_FILES.config),
          openFile(base, MODEL_FILES.tokenizer),
          openFile(base, MODEL_FILES.weights),
        ]);
        const lengths = [cfgRes, tokRes, wRes].map(contentLength);
        const totalBytes = lengths.some((l) => l === null)
          ? null
          : lengths.reduce<number>((a, l) => a + (l ?? 0), 0);
        let loadedBytes = 0;
        let lastReport = -PROGRESS_STEP;
        const reader = (file: string) => (n: number) => {
          loadedBytes += n;
          if (loadedBytes - lastReport >= PROGRESS_STEP) {
            lastReport = loadedBytes;
            notify(onProgress, { file, loadedBytes, totalBytes });
          }
        };
        const decode = (file: string, bytes: Uint8Array): string => {
          try {
            return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
          } catch {
            throw workerError('model', `${file}: not valid UTF-8 text`);
          }
        };
        const config = decode(MODEL_FILES.config, await readBody(cfgRes, reader(MODEL_FILES.config)));
        const tokenizer = decode(
          MODEL_FILES.tokenizer,
          await readBody(tokRes, reader(MODEL_FILES.tokenizer)),
        );
        const weights = await readBody(wRes, reader(MODEL_FILES.weights));
        notify(onProgress, { file: 'gpu', loadedBytes, totalBytes: totalBytes ?? loadedBytes });
        return await engine.loadModel({ config, weights, tokenizer, name: modelName(base) });
      } finally {
        this.busy = null;
      }
    } catch (e) {
      throw toWorkerError(e);
    } finally {
      release(onProgress);
    }
  }

  async generate(prompt: string, n: number, onToken: (ev: TokenEvent) => void): Promise<GenerateResult> {
    try {
      const engine = await this.requireEngine();
      const tok = engine.tokenizer;
      if (!engine.modelInfo) throw workerError('model', 'no model is loaded');
      if (!tok) throw workerError('input', 'this model has no tokenizer: it takes token ids, not text');
      if (typeof prompt !== 'string' || prompt.length === 0)
        throw workerError('input', 'the prompt is empty');
      if (!Number.isInteger(n) || n < 1)
        throw workerError('input', `the number of new tokens must be a whole number ≥ 1, got ${n}`);
      this.claim('generating');
      const abort = new AbortController();
      this.abort = abort;
      try {
        const promptIds = tok.encode(prompt);
        const sofar: number[] = [];
        const newIds = await engine.generate(
          promptIds,
          n,
          (id, step) => {
            sofar.push(id);
            notify(onToken, { id, step, total: n, text: tok.decode(sofar) });
          },
          abort.signal,
        );
        return { promptIds, newIds, text: tok.decode(newIds) };
      } catch (e) {
        if (abort.signal.aborted) throw workerError('cancelled', 'generation cancelled');
        throw e;
      } finally {
        this.abort = null;
        this.busy = null;
      }
    } catch (e) {
      throw toWorkerError(e);
    } finally {
      release(onToken);
    }
  }

  cancel(): void {
    this.abort?.abort();
  }

  private async requireEngine(): Promise<Engine> {
    const r = await this.init();
    if (!r.ok) throw r.error;
    return this.engine!;
  }

  private claim(what: 'loading' | 'generating'): void {
    if (this.busy) {
      throw workerError(
        'input',
        `cannot start ${what} while ${this.busy === 'loading' ? 'a model loads' : 'a generation runs'}`,
      );
    }
    this.busy = what;
  }
}

Comlink.expose(new WorkerEngine());
