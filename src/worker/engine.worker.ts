// The engine's Web Worker: one Engine per worker, exposed through comlink as a WorkerApi, running one job at
// a time. Every failure leaves here as a plain WorkerError object ({ kind, message }, src/worker/boundary.ts),
// which comlink clones as-is.
import * as Comlink from 'comlink';
import { analyze, type Report } from '../compare/analyze';
import { decodeChecker } from '../compare/decode-runs';
import type { RunsReport } from '../compare/runs-report';
import { installCustomKernel } from '../engine/custom-kernel';
import { Engine } from '../engine/engine';
import type { PoolStats } from '../gpu/pool';
import { checkCustomKernel, type KernelCheck } from '../kernels/custom/check';
import { type IsolatedResult, runIsolatedTest } from '../kernels/custom/isolated';
import { type CustomSlotId, isCustomSlotId } from '../kernels/custom/slots';
import { browserShaderSource } from '../kernels/shaders-browser';
import type { NetLimits } from '../run/hub-fetch';
import { LIMITS, parseRunSpec, type RunSpec } from '../run/runspec';
import type {
  CompareOptions,
  ComparePartial,
  CompareProgress,
  GenerateResult,
  HubProbe,
  InitResult,
  LoadedModel,
  LoadOptions,
  LoadProgress,
  ModelBlobInput,
  ModelFilesInput,
  ModelShardsInput,
  RunFileInput,
  RunLoadProgress,
  RunsWarmupStatus,
  TokenEvent,
  UrlProbe,
  WorkerApi,
  WorkerError,
} from './api';
import { notify, release, toWorkerError, workerError } from './boundary';
import { runTokens } from './compare-input';
import { probeHub } from './hub-probe';
import { loadBytes, loadStream } from './install-model';
import { checkModelInput, displayName, shardsOf } from './model-input';
import { compareRunFiles, RunsWarmer } from './runs';
import { loadShards } from './shard-load';
import { folderUrl } from './url-fetch';
import { downloadModel } from './url-load';
import { probeModelUrl } from './url-model';

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
  /** The runs analysis's warm-up: once per worker, yielded to any job (src/worker/runs.ts). */
  private readonly runsWarm = new RunsWarmer();
  /** A new model, as soon as the engine holds it. */
  private readonly keepLoaded = (m: LoadedModel): void => {
    this.loaded = m;
  };

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
      return await this.exclusive('loading', { cancelled: 'download cancelled' }, (signal) =>
        downloadModel(engine, baseUrl, onProgress, signal, options, this.keepLoaded),
      );
    } catch (e) {
      throw toWorkerError(e);
    } finally {
      release(onProgress);
    }
  }

  async probeModelUrl(baseUrl: string, net?: Partial<NetLimits>): Promise<UrlProbe> {
    return this.withEngine(async (engine) => {
      return await probeModelUrl(baseUrl, engine.memoryBudget.bytes, (cfg) => engine.refusalFor(cfg), net);
    });
  }

  /** The Hub lookup in flight: a newer one stops it (the user moved on). */
  private hubLookup: AbortController | null = null;

  async resolveHub(
    repo: string,
    revision: string,
    hubUrl: string,
    net?: Partial<NetLimits>,
  ): Promise<HubProbe> {
    this.hubLookup?.abort();
    const lookup = new AbortController();
    this.hubLookup = lookup;
    try {
      const engine = await this.requireEngine();
      if (typeof repo !== 'string' || typeof revision !== 'string' || typeof hubUrl !== 'string')
        throw workerError('input', 'a Hub model is a repository id, a revision and the Hub’s address');
      folderUrl(hubUrl); // an http(s) origin, or kind 'input'
      return await probeHub(
        repo,
        revision,
        hubUrl,
        engine.memoryBudget.bytes,
        (cfg) => engine.refusalFor(cfg),
        { signal: lookup.signal, limits: net },
      );
    } catch (e) {
      if (lookup.signal.aborted) throw workerError('cancelled', 'lookup stopped: another was asked');
      throw toWorkerError(e);
    } finally {
      if (this.hubLookup === lookup) this.hubLookup = null;
    }
  }

  async loadModelFromShards(files: ModelShardsInput, options?: LoadOptions): Promise<LoadedModel> {
    try {
      const engine = await this.requireEngine();
      const source = shardsOf(files);
      return await this.exclusive('loading', { cancelled: 'load cancelled' }, (signal) =>
        loadShards(
          engine,
          { config: files.config, tokenizer: files.tokenizer, name: displayName(files.name), source, signal },
          options,
          this.keepLoaded,
        ),
      );
    } catch (e) {
      throw toWorkerError(e);
    }
  }

  async setMemoryBudget(gib: number | null): Promise<void> {
    return this.withEngine(async (engine) => {
      if (gib !== null && !(typeof gib === 'number' && Number.isFinite(gib) && gib > 0))
        throw workerError(
          'input',
          `a memory budget is a positive number of GiB, got ${String(gib).slice(0, 40)}`,
        );
      engine.setMemoryBudget(gib === null ? null : gib * 2 ** 30);
    });
  }

  async loadModelFromFiles(files: ModelFilesInput, options?: LoadOptions): Promise<LoadedModel> {
    return this.withEngine(async (engine) => {
      checkModelInput(files, ArrayBuffer);
      return await this.exclusive('loading', null, () =>
        loadBytes(
          engine,
          files.config,
          new Uint8Array(files.weights),
          files.tokenizer,
          displayName(files.name),
          options,
          this.keepLoaded,
        ),
      );
    });
  }

  async loadModelFromBlob(files: ModelBlobInput, options?: LoadOptions): Promise<LoadedModel> {
    return this.withEngine(async (engine) => {
      checkModelInput(files, Blob);
      return await this.exclusive('loading', { cancelled: 'load cancelled' }, (signal) =>
        loadStream(
          engine,
          {
            config: files.config,
            tokenizer: files.tokenizer,
            name: displayName(files.name),
            weights: files.weights.stream(),
            totalBytes: files.weights.size,
            signal,
            reopen: () => files.weights.stream(),
          },
          options,
          this.keepLoaded,
        ),
      );
    });
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
      return await this.exclusive('generating', { cancelled: 'generation cancelled' }, async (signal) => {
        const promptIds = tok.encode(prompt);
        const sofar: number[] = [];
        const newIds = await engine.generate(
          promptIds,
          n,
          (id, step) => {
            sofar.push(id);
            notify(onToken, { id, step, total: n, text: tok.decode(sofar) });
          },
          signal,
        );
        return { promptIds, newIds, text: tok.decode(newIds) };
      });
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
      const tokens = runTokens(engine, spec, this.loaded);
      // A Llama-family model's analysis (compare/family-compare.ts) refuses a page kernel before it is installed.
      if (engine.modelInfo?.family === 'llama' && spec.custom)
        throw workerError('input', 'a kernel written in the page is not yet supported for the Llama family');
      // A cancelled run returns its cached buffers too.
      const cancel = { cancelled: 'run cancelled', onCancel: () => engine.trimPool() };
      return await this.exclusive('comparing', cancel, async (signal) => {
        let restoreKernel: () => void = () => undefined;
        try {
          // A kernel written in the page: checked, then used by this run's fused path only.
          restoreKernel = await installCustomKernel(engine, spec.custom);
          const progress = (phase: string, done: number, total: number) =>
            notify(onProgress, { phase, done, total });
          // With a listener, results go out as they exist: the analysis, then bisection and determinism, then
          // each generated token on both paths.
          return await analyze(engine, spec, tokens, {
            signal,
            onProgress: progress,
            onPartial: onPartial ? (p) => notify(onPartial, p) : undefined,
            oracle: options?.oracle ?? 'auto',
            checkDecode: spec.checkDecode ? decodeChecker(engine) : undefined,
            // Without the checkbox, the decode check starts by itself where the generated text diverges.
            decodeChecker: decodeChecker(engine),
          });
        } finally {
          restoreKernel();
        }
      });
    } catch (e) {
      throw toWorkerError(e);
    } finally {
      release(onProgress);
      if (onPartial) release(onPartial);
    }
  }

  async compareRuns(
    runs: RunFileInput[],
    onLoad: (p: RunLoadProgress) => void,
    onProgress: (p: CompareProgress) => void,
  ): Promise<RunsReport> {
    try {
      const engine = await this.requireEngine();
      const cancel = { cancelled: 'run analysis cancelled', onCancel: () => engine.trimPool() };
      const report = await this.exclusive('comparing', cancel, (signal) =>
        compareRunFiles(
          engine,
          runs,
          signal,
          (p) => notify(onLoad, p),
          (phase, done, total) => notify(onProgress, { phase, done, total }),
        ),
      );
      this.runsWarm.paid();
      return report;
    } catch (e) {
      throw toWorkerError(e);
    } finally {
      release(onLoad);
      release(onProgress);
    }
  }

  async warmRuns(): Promise<RunsWarmupStatus> {
    return this.withEngine((engine) => this.runsWarm.warm(engine, this.busy && BUSY_WORDS[this.busy]));
  }

  async checkKernel(slot: CustomSlotId, source: string): Promise<KernelCheck> {
    return this.withEngine(async (engine) => {
      if (!isCustomSlotId(slot))
        throw workerError('input', `unknown kernel slot '${String(slot).slice(0, 40)}'`);
      if (typeof source !== 'string' || source.length > LIMITS.customSourceChars)
        throw workerError(
          'input',
          `a kernel's source is text of at most ${LIMITS.customSourceChars} characters`,
        );
      return await checkCustomKernel(engine.ctx.device, slot, source, engine.shaderSource);
    });
  }

  async testKernel(slot: CustomSlotId, source: string | null, seed: number): Promise<IsolatedResult> {
    return this.withEngine(async (engine) => {
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
      return await this.exclusive('testing', null, () =>
        runIsolatedTest(engine.ctx.device, engine.shaderSource, slot, source, seed),
      );
    });
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

  /** `f` on this worker's engine (made by init); any failure leaves as a WorkerError. */
  private async withEngine<R>(f: (engine: Engine) => Promise<R>): Promise<R> {
    try {
      return await f(await this.requireEngine());
    } catch (e) {
      throw toWorkerError(e);
    }
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

  /**
   * Runs `work` as the worker's one job `what` (refused while another runs) and frees the worker after. With
   * `cancel`, cancel() aborts the signal `work` gets, and a job that fails once aborted runs `onCancel` and
   * rejects with a 'cancelled' error saying `cancelled`; with null, cancel() leaves the job alone.
   */
  private async exclusive<T>(
    what: Busy,
    cancel: { cancelled: string; onCancel?: () => void } | null,
    work: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    await this.runsWarm.yieldTo();
    this.claim(what);
    const abort = new AbortController();
    if (cancel) this.abort = abort;
    try {
      return await work(abort.signal);
    } catch (e) {
      if (cancel && abort.signal.aborted) {
        cancel.onCancel?.();
        throw workerError('cancelled', cancel.cancelled);
      }
      throw e;
    } finally {
      if (cancel) this.abort = null;
      this.busy = null;
    }
  }
}

Comlink.expose(new WorkerEngine());
