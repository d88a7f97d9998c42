// Greedy decoding with a KV cache, recorded once and replayed. A DecodeSession owns, for one (model, path,
// precision, hooks, capacity), every layer's keys and values (rotary applied) in GPU buffers [H, rows, hd], the
// cos/sin tables of those positions, and two recorded programs: the prefill over a prompt of T tokens and one
// single-token step. Both are ordinary plans (src/engine/plan.ts, so reference, fused or any mix, precision and
// fault hooks exactly as in a forward) built with `kv`. The step is recorded once (pipelines, bind groups,
// buffers); what differs by position — its uniform params and workgroup counts — is computed for every position
// of a generation up front and copied into the step's uniform slabs inside the command encoder before each
// replay, so many steps can share one submit. The last logits row is reduced on the GPU by argmax (split LM
// head pieces are first gathered into one row) into `next`, which the next step's embedding reads as its token
// id: no CPU round trip per token. Each step's id is also copied into `history` at its step, read back by chunks
// (generate.ts).
//
// Numerics: every kernel computes a row from that row alone, or (attention) from keys 0..position in the same
// order whatever the query offset (see the kernels' "Positions" notes), so a decoded row is bit-identical to the
// same row of a whole forward over the same tokens; the ids equal those of re-running the whole forward
// (Engine.generateNoCache). One exception, by design: the stale_buffer fault reads a buffer left behind by
// earlier work, and what was left differs between the two.
import type { PipelineCache } from '../gpu/pipelines';
import { BufferPool } from '../gpu/pool';
import { type DispatchSpec, Program, type TapCopy, type Workgroups } from '../gpu/program';
import { readBuffer, uploadBuffer } from '../gpu/readback';
import { argmaxRow } from '../kernels/argmax';
import { rotaryTables } from '../kernels/rotary';
import { DecodeRecorder, type RecordedDecode } from './decode-record';
import type { GpuModel } from './gpu-model';
import { buildPlan, type Plan, PlanError, type PlanOptions } from './plan';

/** What a DecodeSession needs from the engine. */
export interface DecodeContext {
  device: GPUDevice;
  pipelines: PipelineCache;
  model: GpuModel;
  maxBindingBytes: number;
}

export type DecodeOptions = Pick<PlanOptions, 'fused' | 'precision' | 'hooks' | 'gemm' | 'fold'> & {
  /** Record every op's rows of the prefill and each step (decode-record.ts): our decode as a run. */
  record?: boolean;
};

/** A recorded plan: its buffers stay held while it is cached. */
interface Replay {
  plan: Plan;
  program: Program;
  /** Where its last logits row lies after it ran (what the argmax reads): the buffer and the byte offset. */
  last: { buffer: GPUBuffer; offset: number };
}

/** The step's params and workgroups at positions p0 .. p0 + count − 1: one image of every slab per position. */
interface StepImages {
  p0: number;
  count: number;
  buffer: GPUBuffer;
  stride: number;
  /** Byte offset of each slab within one position's image. */
  slabOffsets: number[];
  workgroups: Workgroups[][];
}

/** Storage usage (a function: GPUBufferUsage exists only once a WebGPU implementation is loaded). */
const storage = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

export class DecodeSession {
  /** Every buffer of the session: its own pool, outside the engine's (the session outlives a generation). */
  private readonly own: BufferPool;
  private readonly k: GPUBuffer[] = [];
  private readonly v: GPUBuffer[] = [];
  private readonly made: GPUBuffer[] = [];
  private readonly cos: GPUBuffer;
  private readonly sin: GPUBuffer;
  /** The argmax of the last step: [1] u32, the next step's token id. */
  private readonly next: GPUBuffer;
  /** The id chosen at step s is at [s]: [rows] u32. */
  readonly history: GPUBuffer;
  /** The prompt's ids [rows] u32 (the prefill's input). */
  private readonly promptIds: GPUBuffer;
  /** One logits row [V] gathered from the LM head's pieces (made when the head is split). */
  private row: GPUBuffer | null = null;
  private readonly prefills = new Map<number, Replay>();
  private step: Replay | null = null;
  private images: StepImages | null = null;
  private prompt = 0;
  /** Recorded programs built (a test's view of the cache: replays build nothing). */
  builds = 0;
  /** With opts.record: every op's rows, by position (read with recorded()). */
  private recorder: DecodeRecorder | null = null;
  /**
   * Each decode step's logits row as the cached decode computed it ([steps, V] f32: step s at row s − 1), kept when
   * prepare() is asked for them: the cached decode's check against the uncached forward (stepLogits()).
   */
  private logits: GPUBuffer | null = null;
  private keepLogits = false;

  /**
   * A cache of `rows` positions. Limits are checked before anything is allocated (PlanError); every buffer goes
   * with release().
   */
  constructor(
    private readonly ctx: DecodeContext,
    readonly rows: number,
    private readonly opts: DecodeOptions,
  ) {
    const { cfg } = ctx.model;
    const layerBytes = cfg.numHeads * rows * cfg.headDim * 4;
    if (!Number.isInteger(rows) || rows < 1)
      throw new PlanError(`a KV cache needs at least one row, got ${rows}`);
    if (layerBytes > ctx.maxBindingBytes) {
      throw new PlanError(
        `a KV cache of ${rows} positions needs ${layerBytes} bytes per layer for its keys, more than one storage binding on this adapter (${ctx.maxBindingBytes}): generate fewer tokens or use a shorter prompt`,
      );
    }
    if (cfg.vocabSize * 4 > ctx.maxBindingBytes) {
      throw new PlanError(
        `a logits row of ${cfg.vocabSize} values needs more than one storage binding on this adapter (${ctx.maxBindingBytes})`,
      );
    }
    const { device } = ctx;
    this.own = new BufferPool(device);
    try {
      for (let i = 0; i < cfg.numLayers; i++) {
        this.k.push(this.own.acquire(layerBytes, storage(), `kv:layers.${i}.k`));
        this.v.push(this.own.acquire(layerBytes, storage(), `kv:layers.${i}.v`));
      }
      const tables = rotaryTables(rows, cfg.rotaryNdims, cfg.rotaryBase); // [rows, r/2]
      this.cos = this.keep(uploadBuffer(device, tables.cos, 'kv:cos'));
      this.sin = this.keep(uploadBuffer(device, tables.sin, 'kv:sin'));
      this.next = this.own.acquire(4, storage(), 'kv:next');
      this.history = this.own.acquire(rows * 4, storage(), 'kv:history');
      this.promptIds = this.own.acquire(rows * 4, storage(), 'kv:prompt');
      if (opts.record) this.recorder = new DecodeRecorder(device, this.own, rows);
    } catch (e) {
      this.release();
      throw e;
    }
  }

  /** Bytes of GPU memory the session holds. */
  get bytes(): number {
    return this.own.stats().bytesLive + this.made.reduce((s, b) => s + b.size, 0);
  }

  /**
   * Readies a generation of `n` ids after `prompt`: writes the prompt's ids, and records (or reuses) the prefill
   * over its length and the step's params at positions prompt.length .. prompt.length + n − 2.
   */
  prepare(prompt: number[], n: number, keepLogits = false): void {
    const T = prompt.length;
    if (T < 1 || n < 1 || T + n - 1 > this.rows) {
      throw new PlanError(`decoding ${n} tokens after ${T} overruns the KV cache of ${this.rows} positions`);
    }
    this.keepLogits = keepLogits && n > 1;
    if (this.keepLogits) {
      const bytes = (n - 1) * this.ctx.model.cfg.vocabSize * 4;
      if (bytes > this.ctx.device.limits.maxBufferSize)
        throw new PlanError(
          `keeping the logits of ${n - 1} decode steps needs ${bytes} bytes, more than one buffer on this adapter (${this.ctx.device.limits.maxBufferSize}): generate fewer tokens`,
        );
      if (!this.logits || this.logits.size < bytes) {
        this.logits?.destroy();
        this.logits = this.ctx.device.createBuffer({
          size: bytes,
          usage: storage(),
          label: 'kv:step-logits',
        });
      }
    }
    this.ctx.device.queue.writeBuffer(this.promptIds, 0, new Uint32Array(prompt));
    if (!this.prefills.has(T)) {
      for (const [t, r] of this.prefills) {
        if (this.prefills.size < 2) break;
        this.drop(r);
        this.prefills.delete(t);
      }
      this.prefills.set(T, this.record(T, 0, this.promptIds));
    }
    this.prompt = T;
    if (n > 1) this.stepImages(T, n - 1);
  }

  /**
   * Records step `s` of the prepared generation into `encoder` (0: the prefill; s > 0: the token chosen at step
   * s − 1, at position prompt + s − 1), leaving its id in history[s].
   */
  encodeStep(encoder: GPUCommandEncoder, s: number): void {
    if (s === 0) this.prefills.get(this.prompt)!.program.encode(encoder);
    else {
      const im = this.images!;
      const j = this.prompt + s - 1 - im.p0;
      if (j < 0 || j >= im.count) throw new Error(`decode: step ${s} was not prepared`);
      const program = this.step!.program;
      program.paramSlabs.forEach((slab, i) => {
        encoder.copyBufferToBuffer(im.buffer, j * im.stride + im.slabOffsets[i], slab.buffer, 0, slab.used);
      });
      program.encode(encoder, null, im.workgroups[j]);
      this.recorder?.afterStep(encoder, this.prompt + s - 1);
      if (this.keepLogits) {
        const V = this.ctx.model.cfg.vocabSize;
        const { buffer, offset } = this.step!.last;
        encoder.copyBufferToBuffer(buffer, offset, this.logits!, (s - 1) * V * 4, V * 4);
      }
    }
    encoder.copyBufferToBuffer(this.next, 0, this.history, s * 4, 4);
  }

  /**
   * With opts.record, after a generation of n ids (its steps submitted): every recorded tap's rows at positions
   * 0 .. prompt + n − 2, by engine tap name, copied into the caller's buffers (on the GPU).
   */
  recorded(n: number): RecordedDecode {
    if (!this.recorder) throw new Error('decode: this session does not record');
    return this.recorder.take(this.prompt + n - 1);
  }

  /**
   * After a generation of n ids prepared with keepLogits (its steps submitted): the logits row of each decode step
   * 1..n−1 as the cached decode computed it, [n − 1, V] (the row of position prompt + s − 1 at row s − 1).
   */
  async stepLogits(n: number): Promise<Float32Array> {
    const V = this.ctx.model.cfg.vocabSize;
    if (n <= 1) return new Float32Array(0);
    if (!this.keepLogits || !this.logits) throw new Error('decode: this generation kept no logits');
    return readBuffer(this.ctx.device, this.logits, (n - 1) * V * 4);
  }

  /** Destroys every buffer of the session. */
  release(): void {
    this.logits?.destroy();
    this.logits = null;
    for (const r of this.prefills.values()) this.drop(r);
    this.prefills.clear();
    if (this.step) this.drop(this.step);
    this.step = null;
    this.images?.buffer.destroy();
    this.images = null;
    this.own?.destroyAll();
    for (const b of this.made) b.destroy();
    this.made.length = 0;
    this.row = null;
  }

  /** The plan of T tokens at positions p0.. reading ids from `ids`, with the argmax of its last row. */
  private planAt(T: number, p0: number, ids: GPUBuffer) {
    const { device, model, maxBindingBytes } = this.ctx;
    const V = model.cfg.vocabSize;
    const plan = buildPlan(device, this.own, model, new Array<number>(T).fill(0), {
      ...this.opts,
      maxBindingBytes,
      ids,
      kv: { p0, rows: this.rows, k: this.k, v: this.v, cos: this.cos, sin: this.sin },
    });
    try {
      // The last row of the logits: [T, V] in one buffer, or [T, cols] pieces gathered into one [V] row.
      const head = plan.ops.find((op) => op.writes.some((w) => w.name === 'logits'));
      const logits = head?.writes.find((w) => w.name === 'logits');
      if (!head || !logits) throw new Error('decode: the plan has no logits');
      const parts = logits.parts ?? [{ buffer: logits.buffer, col0: 0, cols: V }];
      let x = parts[0].buffer;
      let offset = (T - 1) * V;
      const gather: TapCopy[] = [];
      if (parts.length > 1) {
        this.row ??= this.own.acquire(V * 4, storage(), 'kv:logits_row');
        for (const p of parts) {
          gather.push({
            after: head.spec.label,
            src: p.buffer,
            srcOffset: (T - 1) * p.cols * 4,
            dst: this.row,
            dstOffset: p.col0 * 4,
            bytes: p.cols * 4,
          });
        }
        x = this.row;
        offset = 0;
      }
      const specs: DispatchSpec[] = [
        ...plan.ops.map((op) => op.spec),
        argmaxRow('argmax', { x, out: this.next }, offset, V),
      ];
      return { plan, specs, gather, last: { buffer: x, offset: offset * 4 } };
    } catch (e) {
      plan.release();
      throw e;
    }
  }

  private record(T: number, p0: number, ids: GPUBuffer): Replay {
    const { plan, specs, gather, last } = this.planAt(T, p0, ids);
    const program = new Program(this.ctx.device, this.ctx.pipelines);
    try {
      for (const spec of specs) program.add(spec);
      for (const c of gather) program.copyAfter(c);
      this.recorder?.attach(program, plan, p0 > 0 || ids === this.next);
    } catch (e) {
      program.dispose();
      plan.release();
      throw e;
    }
    this.builds++;
    return { plan, program, last };
  }

  /** The step's params and workgroups at positions p0 .. p0 + count − 1 (kept while they cover the next call). */
  private stepImages(p0: number, count: number): void {
    const had = this.images;
    if (had && had.p0 <= p0 && had.p0 + had.count >= p0 + count) return;
    this.step ??= this.record(1, p0, this.next);
    const program = this.step.program;
    const slabs = program.paramSlabs;
    const slabOffsets: number[] = [];
    let stride = 0;
    for (const s of slabs) {
      slabOffsets.push(stride);
      stride += Math.ceil(s.used / 256) * 256;
    }
    const bytes = new Uint8Array(stride * count);
    const workgroups: Workgroups[][] = [];
    const maxDim = this.ctx.device.limits.maxComputeWorkgroupsPerDimension;
    for (let j = 0; j < count; j++) {
      // A plan at this position only for its params and grid (its buffers go straight back).
      const { plan, specs } = this.planAt(1, p0 + j, this.next);
      try {
        program.paramsImage(specs).forEach((img, i) => {
          bytes.set(img, j * stride + slabOffsets[i]);
        });
        for (const s of specs) {
          if (s.workgroups.some((w) => (w ?? 1) > maxDim))
            throw new Error(`${s.label}: dispatch ${s.workgroups.join('x')} exceeds ${maxDim}`);
        }
        workgroups.push(specs.map((s) => s.workgroups));
      } finally {
        plan.release();
      }
    }
    this.own.trim(); // the position plans' activations
    had?.buffer.destroy();
    this.images = null;
    const buffer = this.ctx.device.createBuffer({
      size: Math.max(16, bytes.byteLength),
      usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
      label: 'kv:step-params',
    });
    this.ctx.device.queue.writeBuffer(buffer, 0, bytes);
    this.images = { p0, count, buffer, stride, slabOffsets, workgroups };
  }

  private drop(r: Replay): void {
    r.program.dispose();
    r.plan.release();
  }

  private keep(b: GPUBuffer): GPUBuffer {
    this.made.push(b);
    return b;
  }
}
