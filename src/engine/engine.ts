// The engine API shared by the Web Worker and the Node CLI: load a model, run a forward pass returning the
// hidden-state dump (and any per-op taps), greedy-generate. Nothing here touches the DOM. The work itself
// lives in the modules it delegates to: forward.ts (record and read back), generate.ts, time-forward.ts,
// install.ts (checked upload), batch.ts.
import { type AdapterSummary, acquireGpu, type GpuContext, type GpuFeatures } from '../gpu/device';
import { PipelineCache, type ShaderSource, textHash } from '../gpu/pipelines';
import { BufferPool, type PoolStats } from '../gpu/pool';
import { type GemmPolicy, gemmPolicyFor } from '../kernels/gemm-configs';
import { parseConfigText } from '../model/config';
import type { Tokenizer } from '../model/tokenizer';
import type { ModelWeights, NeoXConfig } from '../model/types';
import { loadWeights, loadWeightsStream } from '../model/weights';
import { GpuBatch } from './batch';
import type { DecodeSession } from './decode';
import { type ForwardContext, runForward, StagingBuffers } from './forward';
import { generateNoCache, generatePaths, type OnStep, type OnToken } from './generate';
import { type GpuModel, uploadModel } from './gpu-model';
import { checkGenerate, checkTokens } from './inputs';
import { uploadChecked } from './install';
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
export { DEFAULT_MEMORY_BUDGET, estimateWeightBytes } from './install';
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
   * After a device loss: a new device, pool and pipeline cache, and the loaded model uploaded again from the
   * CPU copy of its weights — the user's model, settings and results survive. No-op while the device is fine.
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
    const w = this.cpuWeights;
    const info = this.info;
    this.model = null;
    if (w && info) this.model = uploadModel(ctx.device, info.config, w, this.maxBindingBytes);
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

  /** The loaded model's fp32 weights on the CPU (the fp64 oracle reads them). */
  get weights(): ModelWeights | null {
    return this.cpuWeights;
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

  /** Parses and validates everything first; the GPU is touched only once the files are known good. */
  async loadModel(files: ModelFiles): Promise<ModelInfo> {
    this.checkAlive();
    const cfg = parseConfigText(files.config);
    return this.install(cfg, loadWeights(cfg, files.weights), files.tokenizer, files.name);
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
  }): Promise<ModelInfo> {
    this.checkAlive();
    const cfg = parseConfigText(files.config);
    const weights = await loadWeightsStream(cfg, files.weights, files.totalBytes, {
      onProgress: files.onProgress,
      signal: files.signal,
    });
    return this.install(cfg, weights, files.tokenizer, files.name);
  }

  private async install(
    cfg: NeoXConfig,
    weights: ModelWeights,
    tokenizer: string | undefined,
    name: string | undefined,
  ): Promise<ModelInfo> {
    const { model, tok, info } = await uploadChecked(
      this.ctx.device,
      cfg,
      weights,
      { tokenizer, name },
      { ...this.acquireOpts, maxBindingBytes: this.maxBindingBytes },
    );
    this.unloadModel();
    this.clearPlans();
    this.model = model;
    this.cpuWeights = weights;
    this.tok = tok;
    this.info = info;
    return this.info;
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
      throw new EngineError(`generation chunk must be a positive integer, got ${chunk}`);
    if (n === 0) return paths.map(() => []);
    if (signal?.aborted) throw new EngineError('generation cancelled');
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
      if (e instanceof PlanError) throw new EngineError(e.message);
      throw e;
    }
  }

  private requireModel(): GpuModel {
    this.checkAlive();
    if (!this.model) throw new EngineError('no model is loaded');
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
