// The device the engine runs on and everything that lives on it: the buffer pools, the readback staging
// buffers, the pipeline cache (with the page's custom kernel over a shipped file), and the recorded forwards and
// decode sessions kept for replay. A device loss makes all of it useless at once, so renew() replaces it whole on
// a new device and keeps only what is not the device's: the custom kernel's text.
import { acquireGpu, type GpuContext } from '../gpu/device';
import { PipelineCache, type ShaderSource, textHash } from '../gpu/pipelines';
import { BufferPool } from '../gpu/pool';
import { type GemmPolicy, gemmPolicyFor } from '../kernels/gemm-configs';
import {
  checkSubgroupGemm,
  type SubgroupCheck,
  wantSubgroup,
  withSubgroupCheck,
} from '../kernels/gemm-subgroup-check';
import { emptyWeights } from '../model/weights';
import type { NeoXConfig } from '../numeric/types';
import { GpuBatch } from './batch';
import type { DecodeSession } from './decode';
import { type ForwardContext, StagingBuffers } from './forward';
import type { PathsContext } from './generate';
import type { GpuModel } from './gpu-model';
import { checkTokens } from './inputs';
import { allocateChecked, CPU_ADAPTER_BUDGET, isCpuAdapterSummary, type MemoryBudget } from './install';
import { buildPlan, PlanError, type PlanOptions } from './plan';
import { type Lease, PlanCache, type PlanCacheStats } from './plan-cache';
import { foldFor } from './plan-fold';
import { leaseForward, type RecordedForward } from './recorded';
import { EngineError, type EngineOptions, type GenerateOptions, resolvePath } from './types';

/** GPU memory the recorded plans may keep beyond the one in use (the least recently used go first). */
const FORWARD_CACHE_BYTES = 256 * 2 ** 20;
const SESSION_CACHE_BYTES = 256 * 2 ** 20;

export class GpuSession {
  staging: StagingBuffers;
  pool: BufferPool;
  pipelines: PipelineCache;
  /** Recorded whole forwards and decode sessions, replayed while the model and kernels stay the same. */
  readonly forwards = new PlanCache<RecordedForward>(4, FORWARD_CACHE_BYTES);
  readonly sessions = new PlanCache<DecodeSession>(4, SESSION_CACHE_BYTES);
  /** The recorded forwards' buffers (reused from one recording to the next; trim() frees them). */
  planPool: BufferPool;
  private custom: { file: string; source: string } | null = null;
  /** The custom kernel's file and text hash ('' without one): part of every recording's key. */
  kernelKey = '';
  /** The subgroup GEMM core's self-check on this device (null: no policy asked for that core). */
  subgroupCheck: SubgroupCheck | null = null;

  constructor(
    public ctx: GpuContext,
    readonly shaders: ShaderSource,
    private readonly opts: EngineOptions,
  ) {
    this.staging = new StagingBuffers(ctx.device);
    this.pool = new BufferPool(ctx.device);
    this.planPool = new BufferPool(ctx.device);
    this.pipelines = new PipelineCache(ctx.device, shaders);
  }

  get device(): GPUDevice {
    return this.ctx.device;
  }

  /** After a device loss: a new device, pools, pipeline cache and no recordings; the custom kernel stays. */
  async renew(gpu: GPU): Promise<void> {
    const ctx = await acquireGpu(gpu, this.opts);
    this.ctx = ctx;
    this.staging = new StagingBuffers(ctx.device); // the old ones belong to the lost device
    this.pool = new BufferPool(ctx.device);
    this.pipelines = new PipelineCache(ctx.device, this.shaders);
    this.clearPlans(); // recorded on the lost device
    this.planPool = new BufferPool(ctx.device);
    if (this.custom) this.pipelines.setOverride(this.custom.file, this.custom.source);
    await this.checkSubgroupGemm();
  }

  /** Runs the subgroup GEMM core's self-check where the policy asks for that core (at start and after renew). */
  async checkSubgroupGemm(): Promise<void> {
    const want = this.wantedGemmPolicy().subgroup;
    this.subgroupCheck = want ? await checkSubgroupGemm(this.device, this.pipelines, want) : null;
  }

  /** The largest storage binding the engine uses: the device's limit, or a lower cap (tests force splits). */
  get maxBindingBytes(): number {
    return Math.min(
      this.device.limits.maxStorageBufferBindingSize,
      this.opts.maxBindingBytes ?? Number.POSITIVE_INFINITY,
    );
  }

  /**
   * How the fused GEMMs pick tiles and split-K on this adapter (src/kernels/gemm-configs.ts), and their core: the
   * subgroup core only where it was asked for and passed its self-check on this device.
   */
  get gemmPolicy(): GemmPolicy {
    return withSubgroupCheck(this.wantedGemmPolicy(), this.subgroupCheck);
  }

  private wantedGemmPolicy(): GemmPolicy {
    const l = this.device.limits;
    const base =
      this.opts.gemm ??
      gemmPolicyFor(this.ctx.adapter, {
        maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
        maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
      });
    return wantSubgroup(base, this.ctx.subgroupSize, this.opts.subgroupGemm);
  }

  /**
   * The GPU memory models may take on this device: the user's cap (`userBytes`, null: none; a CPU adapter has
   * its own) and the device's buffer limits, with `heldBytes` of weights already loaded.
   */
  budget(userBytes: number | null, heldBytes: number): MemoryBudget {
    const l = this.device.limits;
    const cpu = isCpuAdapterSummary(this.ctx.adapter);
    return {
      bytes: userBytes ?? (cpu ? CPU_ADAPTER_BUDGET : null),
      source: userBytes !== null ? 'user' : cpu ? 'cpu-adapter' : null,
      maxBufferSize: l.maxBufferSize,
      maxBindingBytes: this.maxBindingBytes,
      heldBytes,
    };
  }

  /**
   * One line refusing a model from its config alone, or null: the budget's cap, then its buffers (matrices in
   * fp16, the least it can take) made on this device and freed.
   */
  async refusalFor(cfg: NeoXConfig, budget: MemoryBudget): Promise<string | null> {
    this.checkAlive();
    try {
      const made = await allocateChecked(this.device, cfg, emptyWeights(cfg), true, budget);
      made.model.destroy();
      return null;
    } catch (e) {
      if (e instanceof EngineError) return e.message.replace(/; nothing was (allocated|kept)$/, '');
      throw e;
    }
  }

  /** What generation on `model` needs: the device, the recorded sessions and what a new one is made of. */
  pathsContext(model: GpuModel): PathsContext {
    return {
      device: this.device,
      pipelines: this.pipelines,
      model,
      maxBindingBytes: this.maxBindingBytes,
      gemm: this.gemmPolicy,
      sessions: this.sessions,
      kernelKey: this.kernelKey,
      checkAlive: () => this.checkAlive(),
      settleLoss: () => this.settleLoss(),
    };
  }

  /** The recorded whole forward of T tokens with these options (a replay, or recorded now). */
  recordedForward(m: GpuModel, T: number, opts: GenerateOptions): Lease<RecordedForward> {
    const parts = { device: this.device, pool: this.planPool, pipelines: this.pipelines, model: m };
    const limits = { maxBindingBytes: this.maxBindingBytes, gemm: this.gemmPolicy };
    const lease = leaseForward(this.forwards, parts, T, opts, limits, this.kernelKey);
    // A new recording may have evicted an old one: free its buffers rather than keep them for sizes that may
    // never come again (the no-cache loop records every length once).
    if (!lease.hit) this.planPool.trim();
    return lease;
  }

  /** A plan of one forward (src/engine/plan.ts) from the pool; a plan's refusal is the user's input error. */
  plan(m: GpuModel, tokens: number[], opts: GenerateOptions & { layers?: PlanOptions['layers'] }) {
    try {
      return buildPlan(this.device, this.pool, m, tokens, {
        fused: resolvePath(opts.path),
        precision: opts.precision ?? 'fp32',
        hooks: opts.hooks,
        layers: opts.layers,
        maxBindingBytes: this.maxBindingBytes,
        gemm: this.gemmPolicy,
        // Split-K reductions folded into the ops after them where nothing observable changes (plan-fold.ts).
        fold: foldFor(this.kernelKey),
      });
    } catch (e) {
      if (e instanceof PlanError) throw new EngineError(e.message, 'input');
      throw e;
    }
  }

  /** `custom.source` replaces the WGSL of the shipped file `custom.file` from now on (null: none). */
  setCustomKernel(custom: { file: string; source: string } | null): void {
    if (this.custom) this.pipelines.setOverride(this.custom.file, null);
    this.custom = custom ? { ...custom } : null;
    if (custom) this.pipelines.setOverride(custom.file, custom.source);
    // Recordings are keyed by the kernel text they were compiled from: none is replayed under other text.
    this.kernelKey = custom ? `${custom.file}#${textHash(custom.source)}` : '';
  }

  /** Drops every recorded plan (the model, its weights or a kernel changed). */
  clearPlans(): void {
    this.forwards.clear();
    this.sessions.clear();
  }

  planCacheStats(): { forwards: PlanCacheStats; sessions: PlanCacheStats } {
    return { forwards: this.forwards.stats(), sessions: this.sessions.stats() };
  }

  /** Frees the pools' cached free buffers (in-use ones stay) and the recorded plans not in use. */
  trim(): void {
    this.pool.trim();
    this.staging.trim();
    this.clearPlans();
    this.planPool.trim();
  }

  /** Throws the device's loss, if it is lost. */
  checkAlive(): void {
    const lost = this.ctx.lostError();
    if (lost) throw lost;
  }

  /** After a failure: a failed map or submit is often the device going away; give its loss a moment to be
   * reported, then throw it if there is one. */
  async settleLoss(): Promise<void> {
    await Promise.race([this.ctx.lost, new Promise((r) => setTimeout(r, 50))]);
    this.checkAlive();
  }

  forwardContext(): ForwardContext {
    return {
      device: this.device,
      pipelines: this.pipelines,
      staging: this.staging,
      checkAlive: () => this.checkAlive(),
      settleLoss: () => this.settleLoss(),
    };
  }

  /**
   * A batch on model `m`: forwards (and the caller's own recorded work: the oracle, metric reductions) in one
   * encoder and one submit, every tap kept on the GPU (src/engine/batch.ts).
   */
  batch(m: GpuModel, checkAlive: () => void): GpuBatch {
    return new GpuBatch({
      device: this.device,
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
      checkAlive,
    });
  }

  destroy(): void {
    this.pool.destroyAll();
    this.planPool.destroyAll();
    this.device.destroy();
  }
}
