// The engine API shared by the Web Worker and the Node CLI: load a model, run a forward pass returning the
// hidden-state dump (and any per-op taps), greedy-generate. Nothing here touches the DOM.
import {
  type AcquireOptions,
  type AdapterSummary,
  acquireGpu,
  type GpuContext,
  type GpuFeatures,
} from '../gpu/device';
import { PipelineCache, type ShaderSource } from '../gpu/pipelines';
import { BufferPool, type PoolStats } from '../gpu/pool';
import { Program } from '../gpu/program';
import { refineTimings } from '../gpu/timestamp-refine';
import { GpuTimer, type PassTiming } from '../gpu/timestamps';
import { type GemmPolicy, gemmPolicyFor } from '../kernels/gemm-configs';
import type { Precision } from '../kernels/precision';
import { parseConfigText } from '../model/config';
import { ModelLoadError } from '../model/errors';
import { f16BitsToF32, f32ToF16Bits } from '../model/safetensors';
import { parseTokenizerText, type Tokenizer } from '../model/tokenizer';
import type { HiddenDump, ModelWeights, NeoXConfig } from '../model/types';
import { loadWeights, loadWeightsStream, modelSummary } from '../model/weights';
import { GpuBatch } from './batch';
import { Decoder } from './decode';
import { ALL_FUSED, type FusedKernelId } from './fused-kernels';
import { type GpuModel, uploadModel } from './gpu-model';
import { buildPlan, PlanError, type PlanHooks, type PlanOptions, type TapPart } from './plan';

/** Weight bytes of the model on the GPU (matrices in fp16 or fp32; LayerNorms and biases in fp32). */
export function estimateWeightBytes(cfg: NeoXConfig, weightsF16: boolean): number {
  const { vocabSize: V, hiddenSize: d, intermediateSize: ff, numLayers: L } = cfg;
  const matrices = 2 * V * d + L * (4 * d * d + 2 * d * ff);
  const vectors = L * (3 * d + d + ff + d + 4 * d) + 2 * d;
  return matrices * (weightsF16 ? 2 : 4) + vectors * 4;
}

const AUTO_F16_BYTES = 512 * 2 ** 20;
/** A conservative default for what a browser tab may hold on the GPU; Node callers may raise it. */
export const DEFAULT_MEMORY_BUDGET = 4 * 2 ** 30;
const gib = (b: number) => (b / 2 ** 30).toFixed(2);

export interface EngineOptions extends AcquireOptions {
  /** GPU storage of the large weight matrices (default 'auto', see chooseF16Weights). */
  weights?: 'auto' | 'fp32' | 'fp16';
  /** Refuse models whose weights need more than this many bytes of GPU memory (default 4 GiB). */
  memoryBudgetBytes?: number;
  /** Cap on one storage binding (below the device's limit): large tensors are then split across buffers. */
  maxBindingBytes?: number;
  /** How the fused GEMMs pick tiles and split-K (default: gemmPolicyFor this adapter; tests force split-K). */
  gemm?: GemmPolicy;
}

export interface ModelFiles {
  /** config.json text. */
  config: string;
  /** model.safetensors bytes. */
  weights: Uint8Array;
  /** tokenizer description text (optional; byte-level when absent). */
  tokenizer?: string;
  /** A display name (folder or file name). */
  name?: string;
}

export interface ModelInfo {
  name: string;
  config: NeoXConfig;
  params: number;
  gpuBytes: number;
  tokenizer: string;
  /** How the large weight matrices are stored on the GPU. */
  weightsOnGpu: 'fp32' | 'fp16';
}

export type PathSpec = 'reference' | 'fused' | ReadonlySet<FusedKernelId>;

export interface ForwardOptions {
  /** 'reference' (no fused kernel), 'fused' (all), or the set of fused kernels switched on. */
  path?: PathSpec;
  precision?: Precision;
  /** Fault switches and wiring faults (src/run/faults.ts). */
  hooks?: PlanHooks;
  /** Run only layers [from, to) on the given residual input [T, d] (local error). */
  layers?: { from: number; to: number; input?: Float32Array };
  /** Per-op intermediates to read back: 'all', or a list of stable tap names. */
  taps?: 'all' | string[];
  /**
   * Time each op with timestamp queries (when the adapter has them); where the adapter's timestamps come in
   * steps, ops shorter than a few steps are re-timed by repetition (src/gpu/timestamp-refine.ts).
   */
  timing?: boolean;
  /** Force the timestamp step (ns) instead of detecting it (tests exercise repetition on SwiftShader). */
  timingQuantumNs?: number;
}

export interface ForwardResult {
  dump: HiddenDump;
  taps: Map<string, Float32Array>;
  /** Per-op GPU time, or null when timing was not asked for or is unavailable. */
  timings: PassTiming[] | null;
  dispatches: number;
  /** Wall time of the call's parts, ms: plan (build and bind), record (encode and submit), gpu (submit to mapped),
   * read (copies out of the mapped staging buffer). */
  wall?: Record<string, number>;
}

export class EngineError extends Error {
  override name = 'EngineError';
}

export class Engine {
  private model: GpuModel | null = null;
  private cpuWeights: ModelWeights | null = null;
  private info: ModelInfo | null = null;
  private tok: Tokenizer | null = null;
  private pool: BufferPool;
  private pipelines: PipelineCache;
  private gpuCtx: GpuContext;
  private stagingFree: GPUBuffer[] = [];
  private custom: { file: string; source: string } | null = null;

  private constructor(
    ctx: GpuContext,
    private readonly shaders: ShaderSource,
    private readonly gpu: GPU,
    private readonly acquireOpts: EngineOptions,
  ) {
    this.gpuCtx = ctx;
    this.stagingFree = []; // buffers of the lost device
    this.pool = new BufferPool(ctx.device);
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
    this.stagingFree = []; // buffers of the lost device
    this.pool = new BufferPool(ctx.device);
    this.pipelines = new PipelineCache(ctx.device, this.shaders);
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

  /**
   * fp16 weights on the GPU: when asked for ('fp16'), or ('auto') when the model is large (over 512 MB in
   * fp32) and every value of its matrices is exactly representable in fp16 (an fp16 checkpoint), so that
   * halving the memory loses nothing. When a checkpoint that
   * is not fp16 is forced to fp16, the CPU copy (the oracle's input) is rounded the same way, so both sides
   * compute with the same weights.
   */
  private chooseF16Weights(cfg: NeoXConfig, w: ModelWeights): boolean {
    const mode = this.acquireOpts.weights ?? 'auto';
    if (mode === 'fp32') return false;
    if (mode === 'auto' && estimateWeightBytes(cfg, false) <= AUTO_F16_BYTES) return false;
    const matrices = [
      w.embedIn,
      w.lmHead,
      ...w.layers.flatMap((l) => [l.qkv.weight, l.dense.weight, l.fc1.weight, l.fc2.weight]),
    ];
    const exact = matrices.every((t) =>
      t.data.every((v) => f16BitsToF32(f32ToF16Bits(v)) === v || Number.isNaN(v)),
    );
    if (mode === 'auto') return exact;
    if (!exact) for (const t of matrices) t.data.set(t.data.map((v) => f16BitsToF32(f32ToF16Bits(v))));
    return true;
  }

  /** A readback buffer of at least `bytes` (reused across forwards: creating a mappable buffer per call is slow). */
  private takeStaging(bytes: number): GPUBuffer {
    const size = Math.max(256, Math.ceil(bytes / 256) * 256);
    const i = this.stagingFree.findIndex((b) => b.size >= size && b.size <= 2 * size);
    if (i >= 0) return this.stagingFree.splice(i, 1)[0];
    return this.ctx.device.createBuffer({
      size,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      label: 'forward readback',
    });
  }

  private giveStaging(b: GPUBuffer): void {
    this.stagingFree.push(b);
    while (this.stagingFree.length > 4) this.stagingFree.shift()?.destroy();
  }

  /** Destroys the pool's cached free buffers (in-use ones stay): what a cancelled run leaves behind. */
  trimPool(): void {
    this.pool.trim();
    for (const b of this.stagingFree.splice(0)) b.destroy();
  }

  poolStats(): PoolStats {
    return this.pool.stats();
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
    const files = { tokenizer, name };
    const weightsF16 = this.chooseF16Weights(cfg, weights);
    const need = estimateWeightBytes(cfg, weightsF16);
    const budget = this.acquireOpts.memoryBudgetBytes ?? DEFAULT_MEMORY_BUDGET;
    if (need > budget) {
      throw new EngineError(
        `the model needs ${gib(need)} GiB of GPU memory for its weights${weightsF16 ? ' (in fp16)' : ''}, more than the ${gib(budget)} GiB budget for this adapter; nothing was allocated`,
      );
    }
    // Without a tokenizer description the model is driven by token ids alone.
    let tok: Tokenizer | null = null;
    if (files.tokenizer !== undefined) {
      tok = parseTokenizerText(files.tokenizer);
      if (tok.vocabSize > cfg.vocabSize) {
        throw new ModelLoadError(
          'tokenizer.json',
          `the tokenizer has ${tok.vocabSize} ids but the model's vocab_size is ${cfg.vocabSize}`,
        );
      }
    }
    const device = this.ctx.device;
    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    let gm: GpuModel | null = null;
    let thrown: unknown = null;
    try {
      gm = uploadModel(device, cfg, weights, this.maxBindingBytes, weightsF16);
    } catch (e) {
      thrown = e;
    }
    const validation = await device.popErrorScope();
    const oom = await device.popErrorScope();
    const gpuErr = oom ?? validation;
    if (thrown || gpuErr || !gm) {
      gm?.destroy();
      if (thrown) throw new EngineError(`the model does not fit this adapter: ${(thrown as Error).message}`);
      throw new EngineError(`uploading the weights failed: ${gpuErr?.message ?? 'unknown error'}`);
    }
    this.unloadModel();
    this.model = gm;
    this.cpuWeights = weights;
    this.tok = tok;
    this.info = {
      name: files.name ?? 'model',
      config: cfg,
      params: modelSummary(cfg).params,
      gpuBytes: gm!.bytes,
      tokenizer: tok?.kind ?? 'token ids only',
      weightsOnGpu: weightsF16 ? 'fp16' : 'fp32',
    };
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
  }

  /** The shader source of the shipped files (what a custom kernel is compared with and compiled against). */
  get shaderSource(): ShaderSource {
    return this.shaders;
  }

  unloadModel(): void {
    this.model?.destroy();
    this.model = null;
    this.cpuWeights = null;
    this.info = null;
    this.trimPool();
  }

  /** One forward pass over `tokens`, recorded into one command encoder and submitted once. */
  async forward(tokens: number[], opts: ForwardOptions = {}): Promise<ForwardResult> {
    const m = this.requireModel();
    this.checkTokens(m.cfg, tokens);
    const device = this.ctx.device;
    const t0 = performance.now();
    const plan = this.plan(m, tokens, opts);
    const program = new Program(device, this.pipelines);
    const { cfg } = m;
    const T = tokens.length;
    const from = opts.layers?.from ?? 0;
    const to = opts.layers?.to ?? cfg.numLayers;
    const whole = !opts.layers;
    const layerIdx = Array.from({ length: to - from }, (_, j) => from + j);
    const dumpNames = [
      ...(whole ? ['embed'] : []),
      ...layerIdx.map((i) => `layers.${i}.out`),
      ...(whole ? ['final_norm', 'logits'] : []),
    ];
    const want = new Set<string>(dumpNames);
    if (opts.taps === 'all') for (const op of plan.ops) for (const w of op.writes) want.add(w.name);
    else for (const t of opts.taps ?? []) want.add(t);
    // Every tap read back lands in one staging buffer (one map, not one per tap), at its own offset; a tap split
    // by columns (the LM head of a large vocabulary) has one range per piece.
    const staging = new Map<string, { offsets: number[]; floats: number; parts?: TapPart[] }>();
    const copies: { after: string; src: GPUBuffer; offset: number; bytes: number }[] = [];
    let stagingBytes = 0;
    let stage: GPUBuffer | null = null;
    const wall: Record<string, number> = {};
    const timer = opts.timing ? new GpuTimer(device, plan.ops.length) : null;
    device.pushErrorScope('validation');
    try {
      for (const op of plan.ops) program.add(op.spec);
      for (const op of plan.ops) {
        for (const w of op.writes) {
          if (!want.has(w.name)) continue;
          const sources = w.parts
            ? w.parts.map((p) => ({ buffer: p.buffer, bytes: T * p.cols * 4 }))
            : [{ buffer: w.buffer, bytes: w.floats * 4 }];
          const offsets = sources.map((src) => {
            const offset = stagingBytes;
            copies.push({ after: op.spec.label, src: src.buffer, offset, bytes: src.bytes });
            stagingBytes += Math.ceil(src.bytes / 256) * 256;
            return offset;
          });
          staging.set(w.name, { offsets, floats: w.floats, parts: w.parts });
        }
      }
      for (const name of want) if (!staging.has(name)) throw new EngineError(`unknown tap '${name}'`);
      stage = this.takeStaging(stagingBytes);
      for (const c of copies)
        program.copyAfter({
          after: c.after,
          src: c.src,
          srcOffset: 0,
          dst: stage,
          dstOffset: c.offset,
          bytes: c.bytes,
        });
      wall.plan = performance.now() - t0;
      const encoder = device.createCommandEncoder({ label: 'forward' });
      program.encode(encoder, timer);
      timer?.resolve(encoder);
      device.queue.submit([encoder.finish()]);
      wall.record = performance.now() - t0 - wall.plan;
      const err = await device.popErrorScope();
      if (err) throw new EngineError(`GPU validation error in forward: ${err.message}`);
      const read = new Map<string, Float32Array>();
      await stage.mapAsync(GPUMapMode.READ, 0, stagingBytes);
      wall.gpu = performance.now() - t0 - wall.plan - wall.record;
      const mapped = stage.getMappedRange(0, stagingBytes);
      for (const [name, st] of staging) {
        const sizes = st.parts ? st.parts.map((p) => T * p.cols) : [st.floats];
        const pieces = st.offsets.map((o, i) => new Float32Array(mapped.slice(o, o + sizes[i] * 4)));
        read.set(name, st.parts ? joinColumns(pieces, st.parts, T, st.floats / T) : pieces[0]);
      }
      stage.unmap();
      wall.read = performance.now() - t0 - wall.plan - wall.record - wall.gpu;
      this.checkAlive();
      const first = timer ? await timer.read() : null;
      const timings = first
        ? await refineTimings(device, program, first, timer!.raw(), { quantumNs: opts.timingQuantumNs })
        : null;
      const empty = new Float32Array(0);
      const dump: HiddenDump = {
        T,
        d: cfg.hiddenSize,
        V: cfg.vocabSize,
        embeddings: read.get('embed') ?? empty,
        layers: layerIdx.map((i) => read.get(`layers.${i}.out`)!),
        finalNorm: read.get('final_norm') ?? empty,
        logits: read.get('logits') ?? empty,
      };
      const taps = new Map<string, Float32Array>();
      for (const [name, data] of read) if (!dumpNames.includes(name) || opts.taps) taps.set(name, data);
      return { dump, taps, timings, dispatches: program.dispatchCount, wall };
    } catch (e) {
      if (stage) {
        stage.destroy();
        stage = null;
      }
      // Leave the error scope balanced when the failure came before the pop.
      await device.popErrorScope().catch(() => null);
      // A failed map or submit is often the device going away: give its loss a moment to be reported.
      await Promise.race([this.ctx.lost, new Promise((r) => setTimeout(r, 50))]);
      this.checkAlive();
      throw e;
    } finally {
      if (stage) this.giveStaging(stage);
      timer?.destroy();
      program.dispose();
      plan.release();
    }
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
    this.checkTokens(m.cfg, tokens);
    const device = this.ctx.device;
    const plan = this.plan(m, tokens, opts);
    const program = new Program(device, this.pipelines);
    try {
      for (const op of plan.ops) program.add(op.spec);
      const ms: number[] = [];
      for (let r = 0; r < reps; r++) {
        const t0 = performance.now();
        const encoder = device.createCommandEncoder({ label: 'forward' });
        program.encode(encoder);
        device.queue.submit([encoder.finish()]);
        await device.queue.onSubmittedWorkDone();
        ms.push(performance.now() - t0);
      }
      this.checkAlive();
      return { ms, dispatches: program.dispatchCount };
    } finally {
      program.dispose();
      plan.release();
    }
  }

  /**
   * Greedy decoding of `n` new tokens (argmax, lowest id on ties, NaN never wins) with a KV cache
   * (src/engine/decode.ts): one pass over the prompt that keeps every layer's keys and values, then one
   * single-position step per token; the argmax runs on the GPU and one id is read back per token. The ids are
   * those of generateNoCache. `onToken` sees each new id; an aborted signal stops between steps.
   */
  async generate(
    prompt: number[],
    n: number,
    onToken?: (id: number, step: number) => void,
    signal?: AbortSignal,
    opts: Pick<ForwardOptions, 'path' | 'precision' | 'hooks'> = {},
  ): Promise<number[]> {
    const m = this.requireModel();
    this.checkGenerate(m.cfg, prompt, n);
    if (n === 0) return [];
    if (signal?.aborted) throw new EngineError('generation cancelled');
    const ctx = { device: this.ctx.device, pipelines: this.pipelines, pool: this.pool, model: m };
    const fused = resolvePath(opts.path);
    const precision = opts.precision ?? 'fp32';
    let decoder: Decoder | null = null;
    try {
      // Positions 0 .. prompt + n − 2 are run (the last new token is never fed back).
      const rows = prompt.length + n - 1;
      decoder = new Decoder({ ...ctx, maxBindingBytes: this.maxBindingBytes }, rows, {
        fused,
        precision,
        hooks: opts.hooks,
        gemm: this.gemmPolicy,
      });
      const out: number[] = [];
      let next = prompt;
      for (let step = 0; step < n; step++) {
        if (signal?.aborted) throw new EngineError('generation cancelled');
        const id = await decoder.step(next);
        this.checkAlive();
        out.push(id);
        onToken?.(id, step);
        next = [id];
      }
      return out;
    } catch (e) {
      if (e instanceof PlanError) throw new EngineError(e.message);
      if (e instanceof EngineError) throw e;
      // A failed map or submit is often the device going away: give its loss a moment to be reported.
      await Promise.race([this.ctx.lost, new Promise((r) => setTimeout(r, 50))]);
      this.checkAlive();
      throw e;
    } finally {
      decoder?.release();
    }
  }

  /**
   * Greedy decoding that re-runs the whole forward over prompt + generated tokens for every new token and reads
   * the logits back (the oracle of generate's KV cache; same arguments and ids).
   */
  async generateNoCache(
    prompt: number[],
    n: number,
    onToken?: (id: number, step: number) => void,
    signal?: AbortSignal,
    opts: Pick<ForwardOptions, 'path' | 'precision' | 'hooks'> = {},
  ): Promise<number[]> {
    const m = this.requireModel();
    this.checkGenerate(m.cfg, prompt, n);
    const ids = [...prompt];
    const out: number[] = [];
    for (let step = 0; step < n; step++) {
      if (signal?.aborted) throw new EngineError('generation cancelled');
      const { dump } = await this.forward(ids, opts);
      const V = dump.V;
      const next = argmax(dump.logits, (ids.length - 1) * V, V);
      ids.push(next);
      out.push(next);
      onToken?.(next, step);
    }
    return out;
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
        this.checkTokens(m.cfg, tokens);
        return this.plan(m, tokens, opts);
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
    this.ctx.device.destroy();
  }

  private plan(
    m: GpuModel,
    tokens: number[],
    opts: Pick<ForwardOptions, 'path' | 'precision' | 'hooks'> & { layers?: PlanOptions['layers'] },
  ) {
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

  /** Generation limits, checked before any GPU work. */
  private checkGenerate(cfg: NeoXConfig, prompt: number[], n: number): void {
    if (!Number.isInteger(n) || n < 0)
      throw new EngineError(`generation length must be a non-negative integer, got ${n}`);
    this.checkTokens(cfg, prompt);
    if (prompt.length + n > cfg.maxPositionEmbeddings) {
      throw new EngineError(
        `prompt (${prompt.length}) + ${n} new tokens exceeds max_position_embeddings ${cfg.maxPositionEmbeddings}`,
      );
    }
  }

  private checkTokens(cfg: NeoXConfig, tokens: number[]): void {
    if (tokens.length === 0) throw new EngineError('no tokens: the prompt is empty');
    if (tokens.length > cfg.maxPositionEmbeddings) {
      throw new EngineError(
        `${tokens.length} tokens exceed max_position_embeddings ${cfg.maxPositionEmbeddings}`,
      );
    }
    tokens.forEach((t, i) => {
      if (!Number.isInteger(t) || t < 0 || t >= cfg.vocabSize) {
        throw new EngineError(`token ${i} is ${t}: ids must be integers in [0, ${cfg.vocabSize})`);
      }
    });
  }
}

export function resolvePath(path: PathSpec | undefined): ReadonlySet<FusedKernelId> {
  if (path === undefined || path === 'reference') return new Set();
  if (path === 'fused') return ALL_FUSED;
  return path;
}

/** Puts column pieces [rows, cols_i] side by side into one [rows, width] array. */
function joinColumns(pieces: Float32Array[], parts: TapPart[], rows: number, width: number): Float32Array {
  const out = new Float32Array(rows * width);
  pieces.forEach((p, i) => {
    const { col0, cols } = parts[i];
    for (let r = 0; r < rows; r++) out.set(p.subarray(r * cols, (r + 1) * cols), r * width + col0);
  });
  return out;
}

/** Index of the largest value in a[offset .. offset+n) (lowest index on ties; NaN never wins). */
export function argmax(a: ArrayLike<number>, offset: number, n: number): number {
  let best = 0;
  let bv = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    const v = a[offset + i];
    if (v > bv) {
      bv = v;
      best = i;
    }
  }
  return best;
}
