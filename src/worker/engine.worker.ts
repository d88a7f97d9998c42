// The engine's Web Worker: one Engine per worker, exposed through comlink as a WorkerApi. Every failure
// leaves here as a plain WorkerError object ({ kind, message }), which comlink clones as-is.
import * as Comlink from 'comlink';
import { AnalysisCancelled, analyze, type Report } from '../compare/analyze';
import { DEFAULT_MEMORY_BUDGET, Engine, EngineError } from '../engine/engine';
import { DeviceLostError, GpuUnavailableError } from '../gpu/device';
import type { PoolStats } from '../gpu/pool';
import { checkCustomKernel, type KernelCheck } from '../kernels/custom/check';
import { installCustomKernel } from '../kernels/custom/engine-side';
import { type IsolatedResult, runIsolatedTest } from '../kernels/custom/isolated';
import { type CustomSlotId, isCustomSlotId } from '../kernels/custom/slots';
import { browserShaderSource } from '../kernels/shaders-browser';
import { parseConfigText } from '../model/config';
import { InputError, ModelLoadError, oneLine } from '../model/errors';
import { checkRunLimits } from '../model/limits';
import { modelNameOfUrl } from '../run/hub';
import { LIMITS, parseRunSpec, type RunSpec, RunSpecError } from '../run/runspec';
import { cacheModelFiles } from '../state/history';
import type {
  CompareOptions,
  ComparePartial,
  CompareProgress,
  GenerateResult,
  InitResult,
  LoadedModel,
  LoadOptions,
  LoadProgress,
  ModelBlobInput,
  ModelFilesInput,
  TokenEvent,
  UrlProbe,
  WorkerApi,
  WorkerError,
  WorkerErrorKind,
} from './api';
import {
  BlobCollector,
  budgetRefusal,
  contentLength,
  decodeText,
  folderUrl,
  hashChunks,
  MODEL_FILES,
  mismatchError,
  openFile,
  probeModelUrl,
  readBody,
} from './url-model';

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

/** Lower-case hex SHA-256 (WebGPU needs a secure context, so crypto.subtle is there whenever a GPU is). */
async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

const EMPTY_POOL: PoolStats = { bytesLive: 0, bytesInUse: 0, buffersLive: 0, buffersInUse: 0 };

type Busy = 'loading' | 'generating' | 'comparing' | 'testing';
const BUSY_WORDS: Record<Busy, string> = {
  loading: 'a model loads',
  generating: 'a generation runs',
  comparing: 'a comparison runs',
  testing: 'a kernel test runs',
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
      const abort = new AbortController();
      this.abort = abort;
      const signal = abort.signal;
      try {
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
        const tokenizer = decodeText(
          MODEL_FILES.tokenizer,
          await readBody(tokRes, count(MODEL_FILES.tokenizer)),
        );
        const refusal = budgetRefusal(parseConfigText(config), DEFAULT_MEMORY_BUDGET);
        if (refusal) throw workerError('model', refusal);
        const wRes = await openFile(base, MODEL_FILES.weights, { signal });
        const wLen = contentLength(wRes);
        totalBytes = [...small, wLen].some((l) => l === null)
          ? null
          : [...small, wLen].reduce<number>((a, l) => a + (l ?? 0), 0);
        const before = loadedBytes;
        report(MODEL_FILES.weights, true);
        return await this.loadStream(
          engine,
          {
            config,
            tokenizer,
            name: modelNameOfUrl(base.href),
            weights: wRes.body ?? new Blob([await wRes.arrayBuffer()]).stream(),
            totalBytes: wLen,
            onProgress: (loaded) => {
              loadedBytes = before + loaded;
              report(MODEL_FILES.weights);
            },
            onDownloaded: () =>
              notify(onProgress, { file: 'gpu', loadedBytes, totalBytes: totalBytes ?? loadedBytes }),
            signal,
          },
          options,
        );
      } catch (e) {
        if (signal.aborted) throw workerError('cancelled', 'download cancelled');
        throw e;
      } finally {
        this.abort = null;
        this.busy = null;
      }
    } catch (e) {
      throw toWorkerError(e);
    } finally {
      release(onProgress);
    }
  }

  probeModelUrl(baseUrl: string): Promise<UrlProbe> {
    return probeModelUrl(baseUrl, DEFAULT_MEMORY_BUDGET).catch((e: unknown) => {
      throw toWorkerError(e);
    });
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

  async loadModelFromBlob(files: ModelBlobInput, options?: LoadOptions): Promise<LoadedModel> {
    try {
      const engine = await this.requireEngine();
      if (typeof files?.config !== 'string') throw workerError('model', 'config.json is missing');
      if (!(files.weights instanceof Blob)) throw workerError('model', 'model.safetensors is missing');
      if (files.tokenizer !== undefined && typeof files.tokenizer !== 'string')
        throw workerError('model', 'tokenizer.json: expected text');
      this.claim('loading');
      const abort = new AbortController();
      this.abort = abort;
      try {
        const name = typeof files.name === 'string' && files.name ? files.name.slice(0, 200) : 'model';
        return await this.loadStream(
          engine,
          {
            config: files.config,
            tokenizer: files.tokenizer,
            name,
            weights: files.weights.stream(),
            totalBytes: files.weights.size,
            signal: abort.signal,
          },
          options,
        );
      } catch (e) {
        if (abort.signal.aborted) throw workerError('cancelled', 'load cancelled');
        throw e;
      } finally {
        this.abort = null;
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
    options?: CompareOptions,
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
      let restoreKernel: () => void = () => undefined;
      try {
        // A kernel written in the page: checked, then used by this run's fused path only.
        restoreKernel = await installCustomKernel(engine, spec.custom);
        const progress = (phase: string, done: number, total: number) =>
          notify(onProgress, { phase, done, total });
        // With a listener, results go out as they exist: the analysis, then bisection and determinism, then
        // each generated token on both paths.
        return await analyze(engine, spec, tokens, {
          signal: abort.signal,
          onProgress: progress,
          onPartial: onPartial ? (p) => notify(onPartial, p) : undefined,
          oracle: options?.oracle ?? 'auto',
        });
      } catch (e) {
        if (abort.signal.aborted) {
          engine.trimPool(); // a cancelled run returns its cached buffers too
          throw workerError('cancelled', 'run cancelled');
        }
        throw e;
      } finally {
        restoreKernel();
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

  async checkKernel(slot: CustomSlotId, source: string): Promise<KernelCheck> {
    try {
      const engine = await this.requireEngine();
      if (!isCustomSlotId(slot))
        throw workerError('input', `unknown kernel slot '${String(slot).slice(0, 40)}'`);
      if (typeof source !== 'string' || source.length > LIMITS.customSourceChars)
        throw workerError(
          'input',
          `a kernel's source is text of at most ${LIMITS.customSourceChars} characters`,
        );
      return await checkCustomKernel(engine.ctx.device, slot, source, engine.shaderSource);
    } catch (e) {
      throw toWorkerError(e);
    }
  }

  async testKernel(slot: CustomSlotId, source: string | null, seed: number): Promise<IsolatedResult> {
    try {
      const engine = await this.requireEngine();
      if (!isCustomSlotId(slot))
        throw workerError('input', `unknown kernel slot '${String(slot).slice(0, 40)}'`);
      if (source !== null && (typeof source !== 'string' || source.length > LIMITS.customSourceChars))
        throw workerError(
          'input',
          `a kernel's source is text of at most ${LIMITS.customSourceChars} characters`,
        );
      if (!Number.isInteger(seed) || seed < 0 || seed > 2 ** 31 - 1)
        throw workerError('input', `the seed must be an integer in [0, 2^31 − 1], got ${seed}`);
      if (source !== null) {
        const check = await checkCustomKernel(engine.ctx.device, slot, source, engine.shaderSource);
        if (!check.ok) {
          const err = check.diagnostics.find((d) => d.severity === 'error');
          throw workerError(
            'input',
            err
              ? `the kernel does not compile: line ${err.line}, column ${err.column}: ${err.message}`
              : `the kernel does not fit its slot: ${check.problems[0]}`,
          );
        }
      }
      this.claim('testing');
      try {
        return await runIsolatedTest(engine.ctx.device, engine.shaderSource, slot, source, seed);
      } finally {
        this.busy = null;
      }
    } catch (e) {
      throw toWorkerError(e);
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

  /**
   * Streams model.safetensors into the engine, hashing it on the way; the hash is checked when the stream
   * ends, before the engine installs the model, so a refused file leaves the model loaded before in place.
   */
  private async loadStream(
    engine: Engine,
    f: {
      config: string;
      tokenizer: string | undefined;
      name: string;
      weights: ReadableStream<Uint8Array>;
      totalBytes: number | null;
      onProgress?: (loaded: number) => void;
      onDownloaded?: () => void;
      signal?: AbortSignal;
    },
    options: LoadOptions | undefined,
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
    });
    this.loaded = { ...info, sha256, weightsBytes };
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
    return this.loaded;
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
