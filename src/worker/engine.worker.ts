// The engine's Web Worker: one Engine per worker, exposed through comlink as a WorkerApi. Every failure
// leaves here as a plain WorkerError object ({ kind, message }), which comlink clones as-is.
import * as Comlink from 'comlink';
import { AnalysisCancelled, analyze, type Report } from '../compare/analyze';
import { Engine, EngineError } from '../engine/engine';
import { DeviceLostError, GpuUnavailableError } from '../gpu/device';
import type { PoolStats } from '../gpu/pool';
import { browserShaderSource } from '../kernels/shaders-browser';
import { InputError, ModelLoadError, oneLine } from '../model/errors';
import { checkRunLimits } from '../model/limits';
import { parseRunSpec, type RunSpec, RunSpecError } from '../run/runspec';
import { cacheModelFiles } from '../state/history';
import type {
  ComparePartial,
  CompareProgress,
  GenerateResult,
  InitResult,
  LoadedModel,
  LoadOptions,
  LoadProgress,
  ModelFilesInput,
  TokenEvent,
  WorkerApi,
  WorkerError,
  WorkerErrorKind,
} from './api';
import { compareProgressively } from './progressive';

const MODEL_FILES = {
  config: 'config.json',
  weights: 'model.safetensors',
  tokenizer: 'tokenizer.json',
} as const;
/** At most one progress message per this many bytes (plus one at the end of each file). */
const PROGRESS_STEP = 1 << 20;

function workerError(kind: WorkerErrorKind, message: string): WorkerError {
  return { kind, message: oneLine(message) };
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
  if (e instanceof InputError) return workerError('input', e.message);
  if (e instanceof AnalysisCancelled) return workerError('cancelled', 'run cancelled');
  if (e instanceof RunSpecError) return workerError('input', e.message);
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

function decodeText(file: string, bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw workerError('model', `${file}: not valid UTF-8 text`);
  }
}

function modelName(base: URL): string {
  const parts = base.pathname.split('/').filter((p) => p !== '');
  return decodeURIComponent(parts[parts.length - 1] ?? base.host);
}

/** Lower-case hex SHA-256 (WebGPU needs a secure context, so crypto.subtle is there whenever a GPU is). */
async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

const EMPTY_POOL: PoolStats = { bytesLive: 0, bytesInUse: 0, buffersLive: 0, buffersInUse: 0 };

type Busy = 'loading' | 'generating' | 'comparing';
const BUSY_WORDS: Record<Busy, string> = {
  loading: 'a model loads',
  generating: 'a generation runs',
  comparing: 'a comparison runs',
};

class WorkerEngine implements WorkerApi {
  private engine: Engine | null = null;
  private initPromise: Promise<InitResult> | null = null;
  private busy: Busy | null = null;
  private abort: AbortController | null = null;
  private loaded: LoadedModel | null = null;

  init(onDeviceLost?: (e: WorkerError) => void): Promise<InitResult> {
    this.initPromise ??= Engine.create(navigator.gpu, browserShaderSource).then(
      (engine): InitResult => {
        this.engine = engine;
        if (onDeviceLost) {
          void engine.ctx.lost.then((e) => {
            notify(onDeviceLost, toWorkerError(e));
            release(onDeviceLost);
          });
        }
        return { ok: true, adapter: engine.adapter, features: engine.features };
      },
      (e: unknown): InitResult => {
        if (onDeviceLost) release(onDeviceLost);
        return { ok: false, error: toWorkerError(e) };
      },
    );
    return this.initPromise;
  }

  async loadModelFromUrl(
    baseUrl: string,
    onProgress: (p: LoadProgress) => void,
    options?: LoadOptions,
  ): Promise<LoadedModel> {
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
        if (base.protocol !== 'http:' && base.protocol !== 'https:')
          throw workerError('input', `only http(s) URLs can be loaded, not ${base.protocol}`);
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
        const config = decodeText(MODEL_FILES.config, await readBody(cfgRes, reader(MODEL_FILES.config)));
        const tokenizer = decodeText(
          MODEL_FILES.tokenizer,
          await readBody(tokRes, reader(MODEL_FILES.tokenizer)),
        );
        const weights = await readBody(wRes, reader(MODEL_FILES.weights));
        notify(onProgress, { file: 'gpu', loadedBytes, totalBytes: totalBytes ?? loadedBytes });
        return await this.load(engine, config, weights, tokenizer, modelName(base), options);
      } finally {
        this.busy = null;
      }
    } catch (e) {
      throw toWorkerError(e);
    } finally {
      release(onProgress);
    }
  }

  async loadModelFromFiles(files: ModelFilesInput, options?: LoadOptions): Promise<LoadedModel> {
    try {
      const engine = await this.requireEngine();
      if (typeof files?.config !== 'string') throw workerError('model', 'config.json is missing');
      if (!(files.weights instanceof ArrayBuffer)) throw workerError('model', 'model.safetensors is missing');
      if (files.tokenizer !== undefined && typeof files.tokenizer !== 'string')
        throw workerError('model', 'tokenizer.json: expected text');
      this.claim('loading');
      try {
        const name = typeof files.name === 'string' && files.name ? files.name.slice(0, 200) : 'model';
        return await this.load(
          engine,
          files.config,
          new Uint8Array(files.weights),
          files.tokenizer,
          name,
          options,
        );
      } finally {
        this.busy = null;
      }
    } catch (e) {
      throw toWorkerError(e);
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

  async compare(
    specIn: RunSpec,
    onProgress: (p: CompareProgress) => void,
    onPartial?: (p: ComparePartial) => void,
  ): Promise<Report> {
    try {
      const engine = await this.requireEngine();
      const spec = parseRunSpec(specIn);
      const info = engine.modelInfo;
      const loaded = this.loaded;
      if (!info || !loaded) throw workerError('model', 'no model is loaded');
      if (spec.model.kind === 'embedded' && spec.model.id !== info.name)
        throw workerError('input', `the run names model '${spec.model.id}' but '${info.name}' is loaded`);
      if (spec.model.kind !== 'embedded' && spec.model.sha256 !== loaded.sha256)
        throw workerError('input', 'the run names a model file other than the one loaded (sha256 differs)');
      let tokens: number[];
      if ('tokens' in spec.prompt) {
        tokens = spec.prompt.tokens;
        const bad = tokens.find((t) => t >= info.config.vocabSize);
        if (bad !== undefined)
          throw workerError(
            'input',
            `token id ${bad} is outside the vocabulary (0..${info.config.vocabSize - 1})`,
          );
      } else {
        if (!engine.tokenizer)
          throw workerError('input', `${info.name} has no tokenizer: give the prompt as token ids`);
        tokens = engine.tokenizer.encode(spec.prompt.text);
      }
      // Every limit the config decides (positions, token ids, fault layers), before the GPU is touched.
      checkRunLimits(info.config, { tokens, generate: spec.generate, faults: spec.faults });
      this.claim('comparing');
      const abort = new AbortController();
      this.abort = abort;
      try {
        const progress = (phase: string, done: number, total: number) =>
          notify(onProgress, { phase, done, total });
        // With a listener, results go out as they exist (progressive.ts); without, one analyze() call.
        return onPartial
          ? await compareProgressively(engine, spec, tokens, {
              signal: abort.signal,
              onProgress: progress,
              onPartial: (p) => notify(onPartial, p),
            })
          : await analyze(engine, spec, tokens, { signal: abort.signal, onProgress: progress });
      } catch (e) {
        if (abort.signal.aborted) {
          engine.trimPool(); // a cancelled run returns its cached buffers too
          throw workerError('cancelled', 'run cancelled');
        }
        throw e;
      } finally {
        this.abort = null;
        this.busy = null;
      }
    } catch (e) {
      throw toWorkerError(e);
    } finally {
      release(onProgress);
      if (onPartial) release(onPartial);
    }
  }

  async decode(ids: number[]): Promise<string | null> {
    const tok = this.engine?.tokenizer;
    if (!tok || !Array.isArray(ids)) return null;
    return tok.decode(ids.filter((i) => Number.isInteger(i)));
  }

  cancel(): void {
    this.abort?.abort();
  }

  poolStats(): PoolStats {
    return this.engine ? this.engine.poolStats() : EMPTY_POOL;
  }

  debugLoseDevice(): void {
    this.engine?.ctx.device.destroy();
  }

  private async load(
    engine: Engine,
    config: string,
    weights: Uint8Array,
    tokenizer: string | undefined,
    name: string,
    options: LoadOptions | undefined,
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
    this.loaded = { ...info, sha256, weightsBytes };
    if (options?.cache) {
      try {
        await cacheModelFiles(sha256, { config, weights, tokenizer }, name);
      } catch {
        // No IndexedDB, or over quota: the model runs, it is only not kept for the next visit.
      }
    }
    return this.loaded;
  }

  private async requireEngine(): Promise<Engine> {
    const r = await this.init();
    if (!r.ok) throw r.error;
    return this.engine!;
  }

  private claim(what: Busy): void {
    if (this.busy) throw workerError('input', `cannot start ${what} while ${BUSY_WORDS[this.busy]}`);
    this.busy = what;
  }
}

Comlink.expose(new WorkerEngine());
