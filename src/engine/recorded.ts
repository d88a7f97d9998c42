// A whole forward recorded once and replayed: its plan (activation buffers from the recordings' pool, not the
// engine's: they stay held while the recording is cached), its compiled dispatches (pipelines, bind groups, uniform slabs) and an input buffer for the token ids.
// A replay writes the new ids and records the same dispatches again; what a caller reads back is added per call
// (taps copied after their ops). Kept in a PlanCache keyed by path, precision, hooks and T (engine.ts).
import type { PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import { Program } from '../gpu/program';
import type { GpuModel } from './gpu-model';
import { buildPlan, type Plan, PlanError, type PlanOptions } from './plan';
import { hooksKey, type Lease, type PlanCache, pathKey, type Releasable } from './plan-cache';
import { foldFor } from './plan-fold';
import { EngineError, type GenerateOptions, resolvePath } from './types';

export class RecordedForward implements Releasable {
  readonly plan: Plan;
  readonly program: Program;
  private readonly ids: GPUBuffer;
  private released = false;

  /** Records a whole forward over `T` tokens (limits checked by buildPlan: PlanError). */
  constructor(
    private readonly device: GPUDevice,
    private readonly own: BufferPool,
    pipelines: PipelineCache,
    model: GpuModel,
    readonly T: number,
    opts: Omit<PlanOptions, 'ids' | 'layers' | 'kv'>,
  ) {
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
    this.ids = this.own.acquire(T * 4, usage, 'forward:ids');
    try {
      this.plan = buildPlan(device, this.own, model, new Array<number>(T).fill(0), {
        ...opts,
        ids: this.ids,
      });
    } catch (e) {
      this.own.release(this.ids);
      throw e;
    }
    this.program = new Program(device, pipelines);
    try {
      for (const op of this.plan.ops) this.program.add(op.spec);
    } catch (e) {
      this.release();
      throw e;
    }
  }

  /** Writes the token ids of the next replay (before its submit). */
  setTokens(tokens: number[]): void {
    if (tokens.length !== this.T)
      throw new Error(`recorded forward of ${this.T} tokens given ${tokens.length}`);
    this.device.queue.writeBuffer(this.ids, 0, new Uint32Array(tokens));
  }

  /** GPU bytes of its activations (what the cache counts against its budget). */
  get bytes(): number {
    return this.plan.bytes;
  }

  /** Gives its buffers back to the recordings' pool (idempotent). */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.program.dispose();
    this.plan.release();
    this.own.release(this.ids);
  }
}

/**
 * The recorded whole forward of T tokens with these options from `cache` (a replay), or recorded now: keyed by
 * path, precision, T, what the hooks set (hooksKey, never the object's identity) and the custom kernel's text.
 */
export function leaseForward(
  cache: PlanCache<RecordedForward>,
  parts: { device: GPUDevice; pool: BufferPool; pipelines: PipelineCache; model: GpuModel },
  T: number,
  opts: GenerateOptions,
  limits: Pick<PlanOptions, 'maxBindingBytes' | 'gemm'>,
  kernelKey: string,
): Lease<RecordedForward> {
  const fused = resolvePath(opts.path);
  const precision = opts.precision ?? 'fp32';
  const hooks = hooksKey(opts.hooks, parts.model.cfg.numLayers);
  const key = `${pathKey(fused)}|${precision}|T=${T}|${hooks}|${kernelKey}`;
  const { device, pool, pipelines, model } = parts;
  try {
    return cache.take(
      key,
      () =>
        new RecordedForward(device, pool, pipelines, model, T, {
          fused,
          precision,
          hooks: opts.hooks,
          ...limits,
          fold: foldFor(kernelKey),
        }),
    );
  } catch (e) {
    if (e instanceof PlanError) throw new EngineError(e.message, 'input');
    throw e;
  }
}
