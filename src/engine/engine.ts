// The engine API shared by the Web Worker and the Node CLI: load a model, run a forward pass returning the
// hidden-state dump (and any per-op taps), greedy-generate. Nothing here touches the DOM. The engine is a facade
// over two parts — the device and what lives on it (gpu-session.ts: pools, pipelines, recorded plans, renewed
// after a device loss) and the loaded model (model-slot.ts) — and the modules that do the work: forward.ts
// (record and read back), generate.ts, time-forward.ts, install.ts (checked upload), batch.ts. A Llama-family
// model (the config's family) is held by family-llama.ts instead, and what it does not have yet gets one line.
// Past 400 lines because it is the one facade: each method is a short dispatch to the module doing the work.

import { addPoolStats } from '../gpu/buffer-count';
import { type AdapterSummary, acquireGpu, type GpuContext, type GpuFeatures } from '../gpu/device';
import type { PipelineCache, ShaderSource } from '../gpu/pipelines';
import type { BufferPool, PoolStats } from '../gpu/pool';
import type { GemmPolicy } from '../kernels/gemm-configs';
import { parseModelConfigText } from '../model/model-config';
import type { RandomModelSpec } from '../model/random-model';
import { isShardedSource } from '../model/shard-stream';
import type { Tokenizer } from '../model/tokenizer';
import { bytesSource, isWeightsSource } from '../model/weight-stream';
import type { ModelConfig, ModelWeights } from '../numeric/types';
import type { GpuBatch } from './batch';
import type { RecordedDecode } from './decode-record';
import { LlamaModel, type LlamaSource, llamaRefusal, notForLlama } from './family-llama';
import { runForward } from './forward';
import { generateNoCache, generatePaths, type OnStep, type OnToken } from './generate';
import { type GpuModel, readModelWeights } from './gpu-model';
import { GpuSession } from './gpu-session';
import { checkGenerate, checkGeneratePaths, checkTokens } from './inputs';
import {
  deferredWeights,
  isCpuAdapterSummary,
  keepCpuByDefault,
  type MemoryBudget,
  type ModelSource,
} from './install';
import { ModelSlot, streamedWeights } from './model-slot';
import type { PlanCacheStats } from './plan-cache';
import { timePlan } from './time-forward';
import {
  EngineError,
  type EngineOptions,
  type ForwardOptions,
  type ForwardResult,
  type GenerateOptions,
  type ModelFiles,
  type ModelInfo,
  type ModelStreamFiles,
} from './types';

export { argmax, type OnStep, type OnToken } from './generate';
export { estimateWeightBytes, type MemoryBudget } from './install';
export type { PlanCacheStats } from './plan-cache';
// The engine's options, results and error (types.ts), all of them.
export * from './types';

export class Engine {
  /** The device and what lives on it (pools, pipelines, recorded plans); renewed after a device loss. */
  private gpuSession: GpuSession;
  /** The loaded model. */
  private readonly slot = new ModelSlot();
  /** The loaded Llama-family model, when the loaded model is one (the slot is then empty). */
  private llama: LlamaModel | null = null;
  private budgetBytes: number | null;

  private constructor(
    ctx: GpuContext,
    shaders: ShaderSource,
    private readonly gpu: GPU,
    private readonly acquireOpts: EngineOptions,
  ) {
    this.gpuSession = new GpuSession(ctx, shaders, acquireOpts);
    this.budgetBytes = acquireOpts.memoryBudgetBytes ?? null;
  }

  static async create(
    gpu: GPU | undefined | null,
    shaders: ShaderSource,
    opts: EngineOptions = {},
  ): Promise<Engine> {
    const engine = new Engine(await acquireGpu(gpu, opts), shaders, gpu as GPU, opts);
    await engine.gpuSession.checkSubgroupGemm(); // where a policy asks for the subgroup GEMM core
    return engine;
  }

  get ctx(): GpuContext {
    return this.gpuSession.ctx;
  }

  /** The largest storage binding the engine uses: the device's limit, or a lower cap (tests force splits). */
  get maxBindingBytes(): number {
    return this.gpuSession.maxBindingBytes;
  }

  /** True once the device is lost (recover() makes a new one). */
  get lost(): boolean {
    return this.ctx.lostError() !== null;
  }

  /**
   * The GPU memory models may take: the user's cap (null: none) and the device's buffer limits; a model is
   * also refused when its buffers fail to allocate (src/engine/install.ts).
   */
  get memoryBudget(): MemoryBudget {
    const held = this.slot.model?.bytes ?? this.llama?.info.gpuBytes ?? 0;
    return this.gpuSession.budget(this.budgetBytes, held);
  }

  /**
   * One line refusing a model from its config alone, before any file is read or downloaded, or null: the
   * user's cap, then its buffers (matrices in fp16, the least it can take) made on this device and freed.
   */
  async refusalFor(cfg: ModelConfig): Promise<string | null> {
    if (cfg.family === 'llama') {
      this.checkAlive();
      return llamaRefusal(cfg, this.memoryBudget, this.gpuSession.device.limits.maxStorageBufferBindingSize);
    }
    return this.gpuSession.refusalFor(cfg, this.memoryBudget);
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
    await this.gpuSession.renew(this.gpu);
    const source = this.slot.source;
    const keepCpu = this.slot.cpu !== null;
    this.slot.forget(); // its buffers died with the device
    const llama = this.llama?.source ?? null;
    this.llama = null;
    if (source) await this.installFrom(source, { keepCpu });
    if (llama) await this.installLlama(llama);
  }

  /** How the fused GEMMs pick tiles and split-K on this adapter (src/kernels/gemm-configs.ts). */
  get gemmPolicy(): GemmPolicy {
    return this.gpuSession.gemmPolicy;
  }

  get adapter(): AdapterSummary {
    return this.ctx.adapter;
  }

  get features(): GpuFeatures {
    return this.ctx.features;
  }

  get tokenizer(): Tokenizer | null {
    return this.llama ? this.llama.tok : this.slot.tok;
  }

  get modelInfo(): ModelInfo | null {
    return this.llama?.info ?? this.slot.info;
  }

  /** The loaded Llama-family model's config and fp32 CPU weights (the fp64 oracle's input), or null. */
  get llamaModel(): LlamaModel | null {
    this.checkAlive();
    return this.llama;
  }

  /**
   * The loaded model's fp32 weights on the CPU (the fp64 oracle reads them); null when no model is loaded.
   * The copy is made at load only where the CPU oracle is expected (a CPU adapter, or EngineOptions.cpuWeights
   * 'keep'); otherwise this is a placeholder that throws on use until loadCpuWeights() has made it.
   */
  get weights(): ModelWeights | null {
    if (this.llama) throw notForLlama("the GPT-NeoX weights view (use llamaModel's)");
    if (!this.slot.model) return null;
    return this.slot.cpu ?? deferredWeights();
  }

  /** True when the fp32 CPU copy of the weights exists. */
  get hasCpuWeights(): boolean {
    return this.llama !== null || this.slot.cpu !== null;
  }

  /** The fp32 CPU copy of the weights, made now if it was not (read back from the GPU, exact). */
  async loadCpuWeights(): Promise<ModelWeights> {
    const m = this.requireModel('the GPT-NeoX weights view');
    const w = this.slot.cpu ?? (await readModelWeights(this.ctx.device, m));
    if (this.slot.model === m) this.slot.cpu = w;
    return w;
  }

  /** Destroys the pool's cached free buffers (in-use ones stay) and the recorded plans not in use: what a
   * cancelled run leaves behind. */
  trimPool(): void {
    this.gpuSession.trim();
  }

  /** The pool's buffers, and a Llama-family model's (its passes make their own: family-llama.ts). */
  poolStats(): PoolStats {
    const pool = this.gpuSession.pool.stats();
    return this.llama ? addPoolStats(pool, this.llama.passStats()) : pool;
  }

  /** The recorded plans kept for replay (their buffers are their own, not the pool's): hits, misses, bytes. */
  planCacheStats(): { forwards: PlanCacheStats; sessions: PlanCacheStats } {
    return this.gpuSession.planCacheStats();
  }

  /**
   * Loads a model from its files: the weights bytes in memory, or a source read tensor by tensor (a file on
   * disk). The config, tokenizer and header are checked before the GPU is touched.
   */
  async loadModel(files: ModelFiles): Promise<ModelInfo> {
    this.checkAlive();
    const weights = isWeightsSource(files.weights) ? files.weights : bytesSource(files.weights);
    const cfg = parseModelConfigText(files.config);
    if (cfg.family === 'llama') {
      const { config, tokenizer, name } = files;
      return this.installLlama({ cfg, config, weights, tokenizer, name });
    }
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
   * tensor. The previous model stays loaded until the new one is complete. Sharded weights (an index and its
   * shards, src/model/shard-stream.ts) are checked against their index first and read shard by shard.
   */
  async loadModelStream(files: ModelStreamFiles): Promise<ModelInfo> {
    this.checkAlive();
    const source: ModelSource = {
      kind: 'file',
      config: files.config,
      weights: isShardedSource(files.weights)
        ? files.weights
        : streamedWeights({ ...files, weights: files.weights }),
      tokenizer: files.tokenizer,
      name: files.name,
    };
    const cfg = parseModelConfigText(files.config);
    const o = { onProgress: files.onProgress, signal: files.signal };
    if (cfg.family === 'llama') return this.installLlama({ ...source, cfg }, o);
    return this.installFrom(source, o);
  }

  /** Installs a Llama-family model (family-llama.ts): the previous model stays loaded until it is complete. */
  private async installLlama(
    source: LlamaSource,
    o: { onProgress?: (loaded: number, total: number | null) => void; signal?: AbortSignal } = {},
  ): Promise<ModelInfo> {
    const { device, pipelines } = this.gpuSession;
    const cpu = isCpuAdapterSummary(this.adapter);
    const m = await LlamaModel.install({ device, pipelines }, cpu, source, {
      ...o,
      budget: this.memoryBudget,
    });
    this.unloadModel();
    this.llama = m;
    return m.info;
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
    const keepCpu = o.keepCpu ?? keepCpuByDefault(this.acquireOpts, this.adapter);
    const info = await this.slot.install(this.gpuSession, source, {
      ...o,
      keepCpu,
      weights: this.acquireOpts.weights,
      budget: this.memoryBudget,
    });
    info.family = 'gpt_neox';
    info.flavour = null;
    info.modelConfig = { family: 'gpt_neox', ...info.config };
    this.llama?.destroy();
    this.llama = null;
    // The old model's buffers are gone (the slot destroyed them): so are the recordings that used them.
    this.gpuSession.trim();
    return info;
  }

  /**
   * A kernel written in the page: `source` replaces the WGSL text of the shipped file `file` (under shaders/)
   * in every forward from now on, until called with null. Only the fused path runs fused files, so the
   * reference path is unchanged. The caller checks the source first (src/kernels/custom/check.ts).
   */
  setCustomKernel(custom: { file: string; source: string } | null): void {
    this.gpuSession.setCustomKernel(custom);
  }

  /** The shader source of the shipped files (what a custom kernel is compared with and compiled against). */
  get shaderSource(): ShaderSource {
    return this.gpuSession.shaders;
  }

  unloadModel(): void {
    this.llama?.destroy();
    this.llama = null;
    this.slot.clear();
    this.gpuSession.trim();
  }

  /** One forward pass over `tokens`, submitted in up to 8 command buffers (forward.ts, gpu/submit-chunks.ts). */
  async forward(tokens: number[], opts: ForwardOptions = {}): Promise<ForwardResult> {
    if (this.llama) {
      this.checkAlive();
      checkTokens(this.llama.info.config, tokens);
      if (opts.hooks) throw notForLlama("GPT-NeoX's fault hooks");
      return this.llama.forward(tokens, opts);
    }
    if (opts.llamaFaults) throw new EngineError('Llama-family faults on a GPT-NeoX model', 'input');
    const m = this.requireModel();
    checkTokens(m.cfg, tokens);
    const t0 = performance.now();
    const ctx = this.gpuSession.forwardContext();
    if (opts.layers) {
      const plan = this.gpuSession.plan(m, tokens, opts);
      return runForward(ctx, plan, m.cfg, tokens.length, opts, t0);
    }
    // A whole forward: recorded once per (path, precision, hooks, T), replayed with the new ids.
    const lease = this.gpuSession.recordedForward(m, tokens.length, opts);
    try {
      lease.value.setTokens(tokens);
      const rec = lease.value;
      return await runForward(ctx, rec.plan, m.cfg, tokens.length, opts, t0, rec.program);
    } finally {
      lease.done();
    }
  }

  /**
   * Benchmark helper: builds the plan once, then submits the recorded forward `reps` times, waiting for each
   * to finish (no readback), in the command buffers of forward (opts.submitChunks names another count). Returns the
   * wall time of each submit-to-done in milliseconds, the dispatches and the command buffers.
   */
  async timeForward(
    tokens: number[],
    opts: ForwardOptions,
    reps: number,
  ): Promise<{ ms: number[]; dispatches: number; buffers: number }> {
    const m = this.requireModel('timing a forward');
    checkTokens(m.cfg, tokens);
    const plan = this.gpuSession.plan(m, tokens, opts);
    return timePlan(this.gpuSession.forwardContext(), plan, reps, opts.submitChunks);
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
   * With `opts.recorded` (an empty array), each path's decode is recorded as a run (decode-record.ts): the
   * array gets, per path, every op's rows of the prefill and of each step by engine tap name, on the GPU (the
   * caller releases them).
   */
  async generatePaths(
    prompt: number[],
    n: number,
    paths: GenerateOptions[],
    onStep?: OnStep,
    signal?: AbortSignal,
    opts: { chunk?: number; recorded?: RecordedDecode[]; logits?: Float32Array[] } = {},
  ): Promise<number[][]> {
    if (this.llama) {
      this.checkAlive();
      if (opts.recorded) throw notForLlama('recording the decode steps as runs');
      if (opts.logits) throw notForLlama("reading the decode steps' logits");
      checkGeneratePaths(this.llama.info.config, prompt, n, paths.length, opts.chunk ?? 4);
      if (signal?.aborted) throw new EngineError('generation cancelled', 'cancelled');
      return this.llama.generate(prompt, n, paths, onStep, signal);
    }
    const m = this.requireModel();
    const chunk = opts.chunk ?? 4;
    checkGeneratePaths(m.cfg, prompt, n, paths.length, chunk);
    if (n === 0) return paths.map(() => []);
    if (signal?.aborted) throw new EngineError('generation cancelled', 'cancelled');
    const ctx = this.gpuSession.pathsContext(m);
    return generatePaths(ctx, prompt, n, paths, onStep, signal, chunk, opts.recorded, opts.logits);
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
    if (this.llama) {
      checkGenerate(this.llama.info.config, prompt, n);
      const [ids] = await this.llama.generate(prompt, n, [opts], (s, ids) => onToken?.(ids[0], s), signal);
      return ids;
    }
    const m = this.requireModel();
    checkGenerate(m.cfg, prompt, n);
    return generateNoCache((ids, o) => this.forward(ids, o), prompt, n, onToken, signal, opts);
  }

  /**
   * A batch: forwards (and the caller's own recorded work: the oracle, metric reductions) in one encoder and one
   * submit, every tap kept on the GPU (src/engine/batch.ts).
   */
  batch(): GpuBatch {
    return this.gpuSession.batch(this.requireModel('a batch of GPT-NeoX plans'), () => this.checkAlive());
  }

  /** The device and its pipeline cache, with or without a model (benchmarks of single kernels). */
  devicePipelines(): { device: GPUDevice; pipelines: PipelineCache } {
    return { device: this.gpuSession.device, pipelines: this.gpuSession.pipelines };
  }

  /** The loaded model on the GPU with the device, pipeline cache and pool it lives in (for the GPU oracle). */
  gpuParts(): { device: GPUDevice; pipelines: PipelineCache; pool: BufferPool; model: GpuModel } {
    const s = this.gpuSession;
    return {
      device: s.device,
      pipelines: s.pipelines,
      pool: s.pool,
      model: this.requireModel('the GPU oracle'),
    };
  }

  dispose(): void {
    this.unloadModel();
    this.gpuSession.destroy();
  }

  /** The GPT-NeoX model on the GPU; a Llama-family model gets one line naming `what` it has not yet. */
  private requireModel(what = 'this'): GpuModel {
    this.checkAlive();
    if (this.llama) throw notForLlama(what);
    if (!this.slot.model) throw new EngineError('no model is loaded', 'model');
    return this.slot.model;
  }

  private checkAlive(): void {
    this.gpuSession.checkAlive();
  }
}
