// A batch: several forwards (whole, or single layers on a given input) and whatever else a caller records (the
// oracle, metric reductions) in one command encoder and one submit, with every tap kept on the GPU in a buffer of
// its own. Only what the caller asks for is read back. The comparison runs on this so that a full compare reads
// back summaries, not tensors. flush() hands what is recorded so far to the GPU and goes on recording into a new
// encoder, so the GPU works on the first parts while the CPU records the rest.
import type { PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import { Program } from '../gpu/program';
import { readBuffer } from '../gpu/readback';
import { GpuTimer, type PassTiming } from '../gpu/timestamps';
import type { Plan, TapPart } from './plan';
import type { Lease } from './plan-cache';
import type { RecordedForward } from './recorded';
import type { ForwardOptions } from './types';

/** A tap kept on the GPU: f32 [floats], or side-by-side column pieces (the LM head of a large vocabulary). */
export interface GpuTap {
  name: string;
  buffer: GPUBuffer;
  floats: number;
  /** Column pieces [T, cols] in order, when the tap is split (then `buffer` is the first piece). */
  parts?: TapPart[];
}

export interface BatchForwardOptions extends Omit<ForwardOptions, 'taps' | 'layers'> {
  /** 'dump': embed, layers.i.out, final_norm, logits (those the run has); 'all': every op's taps. */
  taps: 'dump' | 'all';
  /** Run only layers [from, to) on a residual input [T, d] that is already on the GPU. */
  layers?: { from: number; to: number; input: GPUBuffer };
}

export interface BatchForward {
  T: number;
  taps: Map<string, GpuTap>;
  dispatches: number;
  /** Per-op GPU time once the batch is submitted (null without timing or timestamp queries). */
  timings: PassTiming[] | null;
}

/** What a batch needs from the engine (kept narrow so the batch does not reach into the engine). */
export interface BatchContext {
  device: GPUDevice;
  pipelines: PipelineCache;
  pool: BufferPool;
  plan(tokens: number[], opts: BatchForwardOptions): Plan;
  /** A recorded whole forward of these options (replayed; held until the batch is released), when cached. */
  record?(tokens: number[], opts: BatchForwardOptions): Lease<RecordedForward>;
  checkAlive(): void;
}

export class GpuBatch {
  private current: GPUCommandEncoder;
  private plans: Plan[] = [];
  private programs: Program[] = [];
  private leases: Lease<RecordedForward>[] = [];
  private timers: { timer: GpuTimer; run: BatchForward }[] = [];
  private held: GPUBuffer[] = [];
  private cleanups: (() => void)[] = [];
  private submitted = false;
  private released = false;

  constructor(private readonly ctx: BatchContext) {
    this.current = ctx.device.createCommandEncoder({ label: 'batch' });
    ctx.device.pushErrorScope('validation');
  }

  /** Where the batch's work is recorded now (a new encoder after each flush()). */
  get encoder(): GPUCommandEncoder {
    return this.current;
  }

  /**
   * Submits what is recorded so far (the GPU starts on it) and records what follows into a new encoder; the
   * batch stays open. Buffers and taps of the flushed work stay valid until release(); errors are reported by
   * submit(), as for work recorded after.
   */
  flush(): void {
    this.checkOpen();
    this.ctx.device.queue.submit([this.current.finish()]);
    this.current = this.ctx.device.createCommandEncoder({ label: 'batch' });
  }

  get device(): GPUDevice {
    return this.ctx.device;
  }

  /** A pooled storage buffer that lives until release() (for the caller's own recorded work). */
  buffer(bytes: number, label: string): GPUBuffer {
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const b = this.ctx.pool.acquire(bytes, usage, label);
    this.held.push(b);
    return b;
  }

  /** Runs `f` at release() (for resources the caller's recorded work made: the oracle's buffers). */
  onRelease(f: () => void): void {
    this.cleanups.push(f);
  }

  /** Records one forward; its taps are copied, as each op finishes, into buffers that outlive the plan. */
  forward(tokens: number[], opts: BatchForwardOptions): BatchForward {
    this.checkOpen();
    // A whole forward replays its recording (the ids written now, before the batch's submit); a layer range on
    // a GPU input is planned afresh.
    let plan: Plan;
    let program: Program;
    const lease = !opts.layers && this.ctx.record ? this.ctx.record(tokens, opts) : null;
    if (lease) {
      this.leases.push(lease);
      lease.value.setTokens(tokens);
      plan = lease.value.plan;
      program = lease.value.program;
      program.clearCopies();
    } else {
      plan = this.ctx.plan(tokens, opts);
      this.plans.push(plan);
      program = new Program(this.ctx.device, this.ctx.pipelines);
      this.programs.push(program);
      for (const op of plan.ops) program.add(op.spec);
    }
    const T = tokens.length;
    const taps = new Map<string, GpuTap>();
    const dumpTap = (name: string) =>
      name === 'embed' || name === 'final_norm' || name === 'logits' || /^layers\.\d+\.out$/.test(name);
    for (const op of plan.ops) {
      for (const w of op.writes) {
        if (opts.taps === 'dump' && !dumpTap(w.name)) continue;
        const sources = w.parts ?? [{ buffer: w.buffer, col0: 0, cols: w.floats / T }];
        const parts = sources.map((src) => {
          const floats = w.parts ? T * src.cols : w.floats;
          const dst = this.buffer(floats * 4, `tap:${w.name}`);
          program.copyAfter({
            after: op.spec.label,
            src: src.buffer,
            srcOffset: 0,
            dst,
            dstOffset: 0,
            bytes: floats * 4,
          });
          return { buffer: dst, col0: src.col0, cols: src.cols };
        });
        taps.set(w.name, {
          name: w.name,
          buffer: parts[0].buffer,
          floats: w.floats,
          parts: w.parts ? parts : undefined,
        });
      }
    }
    const timer = opts.timing ? new GpuTimer(this.ctx.device, plan.ops.length) : null;
    const run: BatchForward = { T, taps, dispatches: program.dispatchCount, timings: null };
    for (const c of plan.before ?? []) this.encoder.copyBufferToBuffer(c.src, 0, c.dst, 0, c.bytes);
    program.encode(this.encoder, timer);
    program.clearCopies(); // a recorded program keeps none of this batch's copies
    if (timer) {
      timer.resolve(this.encoder);
      this.timers.push({ timer, run });
    }
    return run;
  }

  /**
   * Submits everything recorded (at once, before the first await: a caller may go on recording other work while
   * this waits), waits for the GPU, and reads the timers.
   */
  async submit(): Promise<void> {
    this.checkOpen();
    this.submitted = true;
    const device = this.ctx.device;
    device.queue.submit([this.current.finish()]);
    const err = await device.popErrorScope();
    if (err) throw new Error(`GPU validation error in a batch: ${err.message}`);
    await device.queue.onSubmittedWorkDone();
    this.ctx.checkAlive();
    for (const { timer, run } of this.timers) run.timings = await timer.read();
  }

  /** A tap's rows from..T−1 on the CPU (after submit): for tests, fallbacks and the few tensors the report needs. */
  async read(tap: GpuTap, T: number, from = 0): Promise<Float32Array> {
    if (!this.submitted) throw new Error('read before submit');
    const width = tap.floats / T;
    const R = T - from;
    if (!tap.parts) return readBuffer(this.ctx.device, tap.buffer, R * width * 4, from * width * 4);
    const out = new Float32Array(R * width);
    for (const p of tap.parts) {
      const piece = await readBuffer(this.ctx.device, p.buffer, R * p.cols * 4, from * p.cols * 4);
      for (let r = 0; r < R; r++) out.set(piece.subarray(r * p.cols, (r + 1) * p.cols), r * width + p.col0);
    }
    return out;
  }

  /** Returns every buffer to the pool (idempotent). */
  release(): void {
    if (this.released) return;
    this.released = true;
    if (!this.submitted) {
      this.submitted = true;
      void this.ctx.device.popErrorScope().catch(() => null);
    }
    for (const p of this.programs) p.dispose();
    for (const p of this.plans) p.release();
    for (const l of this.leases) l.done();
    for (const { timer } of this.timers) timer.destroy();
    for (const b of this.held) this.ctx.pool.release(b);
    for (const f of this.cleanups.splice(0)) f();
    this.programs = [];
    this.plans = [];
    this.leases = [];
    this.timers = [];
    this.held = [];
  }

  private checkOpen(): void {
    if (this.submitted || this.released) throw new Error('this batch was already submitted');
  }
}
