// The engine API shared by the Web Worker and the Node CLI: load a model, run a forward pass returning the
// hidden-state dump (and any per-op taps), greedy-generate. Nothing here touches the DOM. The work itself
// lives in the modules it delegates to: forward.ts (record and read back), generate.ts, time-forward.ts,
// install.ts (checked upload), batch.ts.
import { type AdapterSummary, acquireGpu, type GpuContext, type GpuFeatures } from '../gpu/device';
import { PipelineCache, type ShaderSource, textHash } from '../gpu/pipelines';
import { BufferPool, type PoolStats } from '../gpu/pool';
import { type GemmPolicy, gemmPolicyFor } from '../kernels/gemm-configs';
import { parseConfigText } from '../model/config';
import type { RandomModelSpec } from '../model/random-model';
import type { Tokenizer } from '../model/tokenizer';
import type { ModelWeights, NeoXConfig } from '../model/types';
import { bytesSource, isWeightsSource, type WeightsSource } from '../model/weight-stream';
import { emptyWeights } from '../model/weights';
import { GpuBatch } from './batch';
import type { DecodeSession } from './decode';
import { type ForwardContext, runForward, StagingBuffers } from './forward';
import { generateNoCache, generatePaths, type OnStep, type OnToken } from './generate';
import { type GpuModel, readModelWeights } from './gpu-model';
import { checkGenerate, checkTokens } from './inputs';
import {
  allocateChecked,
  CPU_ADAPTER_BUDGET,
  deferredWeights,
  type Installed,
  installSeeded,
  installStream,
  isCpuAdapterSummary,
  type MemoryBudget,
  type ModelSource,
} from './install';
import { buildPlan, PlanError, type PlanOptions } from './plan';
import { type Lease, PlanCache, type PlanCacheStats } from './plan-cache';
import { leaseForward, type RecordedForward } from './recorded';
import { timePlan } from './time-forward';
import {
  EngineError,
  type EngineOptions,
  type ForwardOptions,
  type ForwardResult,
  type GenerateOptions,
  type ModelFiles,
  type ModelInfo,
  resolvePath,
} from './types';

export { argmax, type OnStep, type OnToken } from './generate';
export { estimateWeightBytes, type MemoryBudget } from './install';
export type { PlanCacheStats } from './plan-cache';
export {
  EngineError,
  type EngineOptions,
  type ForwardOptions,
  type ForwardResult,
  type GenerateOptions,
  type ModelFiles,
  type ModelInfo,
  type PathSpec,
  resolvePath,
} from './types';

/** GPU memory the recorded plans may keep beyond the one in use (the least recently used go first). */
const FORWARD_CACHE_BYTES = 256 * 2 ** 20;
const SESSION_CACHE_BYTES = 256 * 2 ** 20;

export class Engine {
  private model: GpuModel | null = null;
  private cpuWeights: ModelWeights | null = null;
  private info: ModelInfo | null = null;
  private tok: Tokenizer | null = null;
  private pool: BufferPool;
  private pipelines: PipelineCache;
  private gpuCtx: GpuContext;
  private staging: StagingBuffers;
  private custom: { file: string; source: string } | null = null;
  /** Where the loaded model came from: a device loss reloads it from there. */
  private source: ModelSource | null = null;
  private budgetBytes: number | null;
  /** Recorded whole forwards and decode sessions, replayed while the model and kernels stay the same. */
  private forwards = new PlanCache<RecordedForward>(4, FORWARD_CACHE_BYTES);
  private sessions = new PlanCache<DecodeSession>(4, SESSION_CACHE_BYTES);
  /** The recorded forwards' buffers (reused from one recording to the next; trimPool frees them). */
  private planPool: BufferPool;
  /** The custom kernel's file and text hash ('' without one): part of every recording's key. */
  private kernelKey = '';

  private constructor(
    ctx: GpuContext,
    private readonly shaders: ShaderSource,
    private readonly gpu: GPU,
    private readonly acquireOpts: EngineOptions,
  ) {
    this.gpuCtx = ctx;
    this.staging = new StagingBuffers(ctx.device);
    this.pool = new BufferPool(ctx.device);
    this.planPool = new BufferPool(ctx.device);
    this.pipelines = new PipelineCache(ctx.device, shaders);
    this.budgetBytes = acquireOpts.memoryBudgetBytes ?? null;
  }

  get ctx(): GpuContext {
    return this.gpuCtx;
  }

  /** The largest storage binding the engine uses: the device's limit, or a lower cap (tests force splits). */
  get maxBindingBytes(): number {
    return Math.min(
      this.gpuCtx.device.limits.maxStorageBufferBindingSize,
      this.acquireOpts.maxBindingBytes ?? Number.POSITIVE_INFINITY,
    );
  }

  /** True once the device is lost (recover() makes a new one). */
  get lost(): boolean {
    return this.gpuCtx.lostError() !== null;
  }

  /**
   * The GPU memory models may take: the user's cap (null: none) and the device's buffer limits; a model is
   * also refused when its buffers fail to allocate (src/engine/install.ts).
   */
  get memoryBudget(): MemoryBudget {
    const l = this.gpuCtx.device.limits;
    const cpu = isCpuAdapterSummary(this.adapter);
    return {
      bytes: this.budgetBytes ?? (cpu ? CPU_ADAPTER_BUDGET : null),
      source: this.budgetBytes !== null ? 'user' : cpu ? 'cpu-adapter' : null,
      maxBufferSize: l.maxBufferSize,
      maxBindingBytes: this.maxBindingBytes,
      heldBytes: this.model?.bytes ?? 0,
    };
  }

  /**
   * One line refusing a model from its config alone, before any file is read or downloaded, or null: the
   * user's cap, then its buffers (matrices in fp16, the least it can take) made on this device and freed.
   */
  async refusalFor(cfg: NeoXConfig): Promise<string | null> {
    this.checkAlive();
    try {
      const made = await allocateChecked(this.ctx.device, cfg, emptyWeights(cfg), true, this.memoryBudget);
      made.model.destroy();
      return null;
    } catch (e) {
      if (e instanceof EngineError) return e.message.replace(/; nothing was (allocated|kept)$/, '');
      throw e;
    }
  }

  /** Sets (bytes) or clears (null) the user's cap on the GPU memory of a model's weights, for later loads. */
  setMemoryBudget(bytes: number | null): void {
    if (bytes !== null && !(Number.isFinite(bytes) && bytes > 0)) {
      throw new EngineError(`a memory budget is a positive number of bytes, got ${bytes}`, 'input');
    }
    this.budgetBytes = bytes;
  }

  /**
   * After a device loss: a new device, pool and pipeline cache, and the loaded model read again from its
   * source (the file, the Blob or the download it came from, or its seed) — the user's model, settings and
   * results survive. No-op while the device is fine.
   */
  async recover(): Promise<void> {
    if (!this.lost) return;
    const ctx = await acquireGpu(this.gpu, this.acquireOpts);
    this.gpuCtx = ctx;
    this.staging = new StagingBuffers(ctx.device); // the old ones belong to the lost device
    this.pool = new BufferPool(ctx.device);
    this.pipelines = new PipelineCache(ctx.device, this.shaders);
    this.clearPlans(); // recorded on the lost device
    this.planPool = new BufferPool(ctx.device);
    if (this.custom) this.pipelines.setOverride(this.custom.file, this.custom.source);
    const source = this.source;
    const keepCpu = this.cpuWeights !== null;
    this.model = null;
    this.cpuWeights = null;
    this.info = null;
    this.source = null;
    if (source) await this.installFrom(source, { keepCpu });
  }

  static async create(
    gpu: GPU | undefined | null,
    shaders: ShaderSource,
    opts: EngineOptions = {},
  ): Promise<Engine> {
    const ctx = await acquireGpu(gpu, opts);
    return new Engine(ctx, shaders, gpu as GPU, opts);
  }

  /** How the fused GEMMs pick tiles and split-K on this adapter (src/kernels/gemm-configs.ts). */
  get gemmPolicy(): GemmPolicy {
    if (this.acquireOpts.gemm) return this.acquireOpts.gemm;
    const l = this.ctx.device.limits;
    return gemmPolicyFor(this.ctx.adapter, {
      maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
    });
  }

  get adapter(): AdapterSummary {
    return this.ctx.adapter;
  }

  get features(): GpuFeatures {
    return this.ctx.features;
  }

  get tokenizer(): Tokenizer | null {
    return this.tok;
  }

  get modelInfo(): ModelInfo | null {
    return this.info;
  }

  /**
   * The loaded model's fp32 weights on the CPU (the fp64 oracle reads them); null when no model is loaded.
   * The copy is made at load only where the CPU oracle is expected (a CPU adapter, or EngineOptions.cpuWeights
   * 'keep'); otherwise this is a placeholder that throws on use until loadCpuWeights() has made it.
   */
  get weights(): ModelWeights | null {
    if (!this.model) return null;
    return this.cpuWeights ?? deferredWeights();
  }

  /** True when the fp32 CPU copy of the weights exists. */
  get hasCpuWeights(): boolean {
    return this.cpuWeights !== null;
  }

  /** The fp32 CPU copy of the weights, made now if it was not (read back from the GPU, exact). */
  async loadCpuWeights(): Promise<ModelWeights> {
    const m = this.requireModel();
    const w = this.cpuWeights ?? (await readModelWeights(this.ctx.device, m));
    if (this.model === m) this.cpuWeights = w;
    return w;
  }

  /** Destroys the pool's cached free buffers (in-use ones stay) and the recorded plans not in use: what a
   * cancelled run leaves behind. */
  trimPool(): void {
    this.pool.trim();
    this.staging.trim();
    this.clearPlans();
    this.planPool.trim();
  }

  poolStats(): PoolStats {
    return this.pool.stats();
  }

  /** The recorded plans kept for replay (their buffers are their own, not the pool's): hits, misses, bytes. */
  planCacheStats(): { forwards: PlanCacheStats; sessions: PlanCacheStats } {
    return { forwards: this.forwards.stats(), sessions: this.sessions.stats() };
  }

  /** Drops every recorded plan (the model, its weights or a kernel changed). */
  private clearPlans(): void {
    this.forwards.clear();
    this.sessions.clear();
  }

  /**
   * Loads a model from its files: the weights bytes in memory, or a source read tensor by tensor (a file on
   * disk). The config, tokenizer and header are checked before the GPU is touched.
   */
  async loadModel(files: ModelFiles): Promise<ModelInfo> {
    this.checkAlive();
    const weights = isWeightsSource(files.weights) ? files.weights : bytesSource(files.weights);
    return this.installFrom({
      kind: 'file',
      config: files.config,
      weights,
      tokenizer: files.tokenizer,
      name: files.name,
    });
  }

  /**
   * A seeded model of the spec's shape made on the GPU in one submit (src/model/seeded-weights.ts: the same
   * seed gives the same weights on any adapter), for benchmarks and tests; token ids only, no tokenizer.
   */
  async loadSeededModel(spec: RandomModelSpec, seed: number, name?: string): Promise<ModelInfo> {
    this.checkAlive();
    return this.installFrom({ kind: 'seeded', spec: { ...spec }, seed, name });
  }

  /**
   * Loads a model whose safetensors arrive as a stream (fetch body, File.stream(), a Node file): read chunk by
   * chunk with progress and cancellation, never held whole in memory, then checked and uploaded tensor by
   * tensor. The previous model stays loaded until the new one is complete.
   */
  async loadModelStream(files: {
    config: string;
    weights: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
    totalBytes: number | null;
    tokenizer?: string;
    name?: string;
    onProgress?: (loaded: number, total: number | null) => void;
    signal?: AbortSignal;
    /** The same bytes again from the start (a reload after a device loss); without it, no reload. */
    reopen?: () => ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
  }): Promise<ModelInfo> {
    this.checkAlive();
    let first: typeof files.weights | null = files.weights;
    const weights: WeightsSource = {
      bytes: files.totalBytes,
      open: () => {
        const s = first;
        first = null;
        if (s) return s;
        if (!files.reopen)
          throw new EngineError(`the weights of ${files.name ?? 'the model'} cannot be read again`);
        return files.reopen();
      },
    };
    return this.installFrom(
      { kind: 'file', config: files.config, weights, tokenizer: files.tokenizer, name: files.name },
      { onProgress: files.onProgress, signal: files.signal },
    );
  }

  /** Installs a model from a source: the previous model stays loaded until the new one is complete. */
  private async installFrom(
    source: ModelSource,
    o: {
      keepCpu?: boolean;
      onProgress?: (loaded: number, total: number | null) => void;
      signal?: AbortSignal;
    } = {},
  ): Promise<ModelInfo> {
    const keepCpu = o.keepCpu ?? this.keepCpuByDefault();
    const opts = { weights: this.acquireOpts.weights, budget: this.memoryBudget, keepCpu };
    let done: Installed;
    if (source.kind === 'seeded') {
      done = await installSeeded(this.ctx.device, this.pipelines, source, opts);
    } else {
      const cfg = parseConfigText(source.config);
      const files = { tokenizer: source.tokenizer, name: source.name };
      const streaming = { ...opts, onProgress: o.onProgress, signal: o.signal };
      done = await installStream(this.ctx.device, cfg, source.weights, files, streaming);
    }
    this.unloadModel();
    this.clearPlans();
    this.model = done.model;
    this.cpuWeights = done.cpu;
    this.tok = done.tok;
    this.info = done.info;
    this.source = source;
    return done.info;
  }

  /** Whether a load keeps the fp32 CPU copy: asked for, or (auto) where the CPU oracle will run (a CPU adapter). */
  private keepCpuByDefault(): boolean {
    const mode = this.acquireOpts.cpuWeights ?? 'auto';
    return mode === 'keep' || (mode === 'auto' && isCpuAdapterSummary(this.adapter));
  }

  /**
   * A kernel written in the page: `source` replaces the WGSL text of the shipped file `file` (under shaders/)
   * in every forward from now on, until called with null. Only the fused path runs fused files, so the
   * reference path is unchanged. The caller checks the source first (src/kernels/custom/check.ts).
   */
  setCustomKernel(custom: { file: string; source: string } | null): void {
    if (this.custom) this.pipelines.setOverride(this.custom.file, null);
    this.custom = custom ? { ...custom } : null;
    if (custom) this.pipelines.setOverride(custom.file, custom.source);
    // Recordings are keyed by the kernel text they were compiled from: none is replayed under other text.
    this.kernelKey = custom ? `${custom.file}#${textHash(custom.source)}` : '';
  }

  /** The shader source of the shipped files (what a custom kernel is compared with and compiled against). */
  get shaderSource(): ShaderSource {
    return this.shaders;
  }

  unloadModel(): void {
    this.clearPlans();
    this.model?.destroy();
    this.model = null;
    this.cpuWeights = null;
    this.info = null;
    this.source = null;
    this.trimPool();
  }

  /** One forward pass over `tokens`, recorded into one command encoder and submitted once (forward.ts). */
  async forward(tokens: number[], opts: ForwardOptions = {}): Promise<ForwardResult> {
    const m = this.requireModel();
    checkTokens(m.cfg, tokens);
    const t0 = performance.now();
    if (opts.layers) {
      const plan = this.plan(m, tokens, opts);
      return runForward(this.forwardContext(), plan, m.cfg, tokens.length, opts, t0);
    }
    // A whole forward: recorded once per (path, precision, hooks, T), replayed with the new ids.
    const lease = this.recordedForward(m, tokens.length, opts);
    try {
      lease.value.setTokens(tokens);
      const rec = lease.value;
      return await runForward(this.forwardContext(), rec.plan, m.cfg, tokens.length, opts, t0, rec.program);
    } finally {
      lease.done();
    }
  }

  /** The recorded whole forward of T tokens with these options (a replay, or recorded now). */
  private recordedForward(m: GpuModel, T: number, opts: GenerateOptions): Lease<RecordedForward> {
    const parts = { device: this.ctx.device, pool: this.planPool, pipelines: this.pipelines, model: m };
    const limits = { maxBindingBytes: this.maxBindingBytes, gemm: this.gemmPolicy };
    const lease = leaseForward(this.forwards, parts, T, opts, limits, this.kernelKey);
    // A new recording may have evicted an old one: free its buffers rather than keep them for sizes that may
    // never come again (the no-cache loop records every length once).
    if (!lease.hit) this.planPool.trim();
    return lease;
  }

  /**
   * Benchmark helper: builds the plan once, then submits the recorded forward `reps` times, waiting for each
   * to finish (no readback). Returns the wall time of each submit-to-done in milliseconds.
   */
  async timeForward(
    tokens: number[],
    opts: ForwardOptions,
    reps: number,
  ): Promise<{ ms: number[]; dispatches: number }> {
    const m = this.requireModel();
    checkTokens(m.cfg, tokens);
    const plan = this.plan(m, tokens, opts);
    return timePlan(this.forwardContext(), plan, reps);
  }

  /**
   * Greedy decoding of `n` new tokens (argmax, lowest id on ties, NaN never wins) with a KV cache
   * (src/engine/decode.ts): one pass over the prompt that keeps every layer's keys and values, then one
   * single-position step per token, recorded once and replayed; the argmax runs on the GPU and feeds the next
   * step there. The ids are those of generateNoCache. `onToken` sees each new id as its step is read back (one
   * step per submit, the next already queued); an aborted signal stops between steps.
   */
  async generate(
    prompt: number[],
    n: number,
    onToken?: OnToken,
    signal?: AbortSignal,
    opts: GenerateOptions = {},
  ): Promise<number[]> {
    const [ids] = await this.generatePaths(
      prompt,
      n,
      [opts],
      onToken ? (step, ids) => onToken(ids[0], step) : undefined,
      signal,
      { chunk: 1 },
    );
    return ids;
  }

  /**
   * Greedy decoding of `n` new tokens after `prompt` on several paths at once (e.g. [reference, fused with its
   * hooks]): each path's steps as in generate (the same ids, path by path), all paths' step s recorded together,
   * `chunk` steps per submit (default 4; the ids read back once per chunk, the next chunk already queued).
   * `onStep(step, ids)` gets that step's id of every path, in the order of `paths`. Returns the ids per path.
   */
  async generatePaths(
    prompt: number[],
    n: number,
    paths: GenerateOptions[],
    onStep?: OnStep,
    signal?: AbortSignal,
    opts: { chunk?: number } = {},
  ): Promise<number[][]> {
    const m = this.requireModel();
    checkGenerate(m.cfg, prompt, n);
    if (paths.length === 0) throw new EngineError('generation needs at least one path');
    const chunk = opts.chunk ?? 4;
    if (!Number.isInteger(chunk) || chunk < 1)
      throw new EngineError(`generation chunk must be a positive integer, got ${chunk}`, 'input');
    if (n === 0) return paths.map(() => []);
    if (signal?.aborted) throw new EngineError('generation cancelled', 'cancelled');
    const ctx = {
      device: this.ctx.device,
      pipelines: this.pipelines,
      model: m,
      maxBindingBytes: this.maxBindingBytes,
      gemm: this.gemmPolicy,
      sessions: this.sessions,
      kernelKey: this.kernelKey,
      checkAlive: () => this.checkAlive(),
      settleLoss: () => this.settleLoss(),
    };
    return generatePaths(ctx, prompt, n, paths, onStep, signal, chunk);
  }

  /**
   * Greedy decoding that re-runs the whole forward over prompt + generated tokens for every new token and reads
   * the logits back (the oracle of generate's KV cache; same arguments and ids).
   */
  async generateNoCache(
    prompt: number[],
    n: number,
    onToken?: OnToken,
    signal?: AbortSignal,
    opts: GenerateOptions = {},
  ): Promise<number[]> {
    const m = this.requireModel();
    checkGenerate(m.cfg, prompt, n);
    return generateNoCache((ids, o) => this.forward(ids, o), prompt, n, onToken, signal, opts);
  }

  /**
   * A batch: forwards (and the caller's own recorded work: the oracle, metric reductions) in one encoder and one
   * submit, every tap kept on the GPU (src/engine/batch.ts).
   */
  batch(): GpuBatch {
    const m = this.requireModel();
    return new GpuBatch({
      device: this.ctx.device,
      pipelines: this.pipelines,
      pool: this.pool,
      plan: (tokens, opts) => {
        checkTokens(m.cfg, tokens);
        return this.plan(m, tokens, opts);
      },
      record: (tokens, opts) => {
        checkTokens(m.cfg, tokens);
        return this.recordedForward(m, tokens.length, opts);
      },
      checkAlive: () => this.checkAlive(),
    });
  }

  /** The loaded model on the GPU with the device, pipeline cache and pool it lives in (for the GPU oracle). */
  gpuParts(): { device: GPUDevice; pipelines: PipelineCache; pool: BufferPool; model: GpuModel } {
    return {
      device: this.ctx.device,
      pipelines: this.pipelines,
      pool: this.pool,
      model: this.requireModel(),
    };
  }

  dispose(): void {
    this.unloadModel();
    this.pool.destroyAll();
    this.planPool.destroyAll();
    this.ctx.device.destroy();
  }

  private plan(m: GpuModel, tokens: number[], opts: GenerateOptions & { layers?: PlanOptions['layers'] }) {
    try {
      return buildPlan(this.ctx.device, this.pool, m, tokens, {
        fused: resolvePath(opts.path),
        precision: opts.precision ?? 'fp32',
        hooks: opts.hooks,
        layers: opts.layers,
        maxBindingBytes: this.maxBindingBytes,
        gemm: this.gemmPolicy,
      });
    } catch (e) {
      if (e instanceof PlanError) throw new EngineError(e.message, 'input');
      throw e;
    }
  }

  private requireModel(): GpuModel {
    this.checkAlive();
    if (!this.model) throw new EngineError('no model is loaded', 'model');
    return this.model;
  }

  private checkAlive(): void {
    const lost = this.ctx.lostError();
    if (lost) throw lost;
  }

  private forwardContext(): ForwardContext {
    return {
      device: this.ctx.device,
      pipelines: this.pipelines,
      staging: this.staging,
      checkAlive: () => this.checkAlive(),
      settleLoss: () => this.settleLoss(),
    };
  }

  /** After a failure: a failed map or submit is often the device going away; give its loss a moment to be
   * reported, then throw it if there is one. */
  private async settleLoss(): Promise<void> {
    await Promise.race([this.ctx.lost, new Promise((r) => setTimeout(r, 50))]);
    this.checkAlive();
  }
}
