// Greedy decoding with a KV cache. A Decoder owns, for one generation, every layer's keys and values (rotary
// applied) in GPU buffers [H, rows, hd] sized for prompt + n − 1 positions, and the cos/sin tables of those
// positions. Each step is an ordinary plan (src/engine/plan.ts, so reference, fused or any mix, precision and
// fault hooks exactly as in a forward) built with `kv`: its tokens sit at positions p0.., each layer writes its
// k and v into the cache at those positions and attends to keys 0 .. p0 + T − 1 there. The first step is the
// prompt (prefill), every later one a single token. The last logits row is reduced on the GPU by argmax (split
// LM head pieces are first gathered into one row) and one u32 is read back per step.
//
// Numerics: every kernel computes a row from that row alone, or (attention) from keys 0..position in the same
// order whatever the query offset (see the kernels' "Positions" notes), so a decoded row is bit-identical to the
// same row of a whole forward over the same tokens; the ids equal those of re-running the whole forward
// (Engine.generateNoCache). One exception, by design: the stale_buffer fault reads a buffer the pool left
// behind, and what the pool left differs between the two.
import type { PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import { Program } from '../gpu/program';
import { uploadBuffer } from '../gpu/readback';
import { argmaxRow } from '../kernels/argmax';
import { rotaryTables } from '../kernels/rotary';
import type { GpuModel } from './gpu-model';
import { buildPlan, PlanError, type PlanOptions } from './plan';

/** What a Decoder needs from the engine. */
export interface DecodeContext {
  device: GPUDevice;
  pipelines: PipelineCache;
  pool: BufferPool;
  model: GpuModel;
  maxBindingBytes: number;
}

export type DecodeOptions = Pick<PlanOptions, 'fused' | 'precision' | 'hooks' | 'gemm'>;

export class Decoder {
  private pos = 0;
  private readonly k: GPUBuffer[] = [];
  private readonly v: GPUBuffer[] = [];
  private readonly pooled: GPUBuffer[] = [];
  private readonly made: GPUBuffer[] = [];
  private readonly cos: GPUBuffer;
  private readonly sin: GPUBuffer;
  /** The chosen id: [1] u32, and its mappable copy. */
  private readonly out: GPUBuffer;
  private readonly staging: GPUBuffer;
  /** One logits row [V] gathered from the LM head's pieces (made when a step's head is split). */
  private row: GPUBuffer | null = null;

  /**
   * A cache of `rows` positions. Limits are checked before anything is allocated (PlanError); every buffer goes
   * back with release().
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
    try {
      for (let i = 0; i < cfg.numLayers; i++) {
        this.k.push(this.acquire(layerBytes, `kv:layers.${i}.k`));
        this.v.push(this.acquire(layerBytes, `kv:layers.${i}.v`));
      }
      const tables = rotaryTables(rows, cfg.rotaryNdims, cfg.rotaryBase); // [rows, r/2]
      this.cos = this.keep(uploadBuffer(device, tables.cos, 'kv:cos'));
      this.sin = this.keep(uploadBuffer(device, tables.sin, 'kv:sin'));
      this.out = this.acquire(4, 'kv:next');
      this.staging = this.keep(
        device.createBuffer({
          size: 4,
          usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
          label: 'kv:read',
        }),
      );
    } catch (e) {
      this.release();
      throw e;
    }
  }

  /** Positions filled so far (the next step's first position). */
  get position(): number {
    return this.pos;
  }

  /**
   * Runs `tokens` (the prompt, then one token a step) at the next positions: writes their keys and values into
   * the cache and returns the argmax of the last token's logits (lowest id on ties, NaN never wins).
   */
  async step(tokens: number[]): Promise<number> {
    const { device, pool, model, pipelines, maxBindingBytes } = this.ctx;
    const T = tokens.length;
    if (T < 1 || this.pos + T > this.rows) {
      throw new PlanError(
        `decoding ${T} tokens at position ${this.pos} overruns the KV cache of ${this.rows} positions`,
      );
    }
    const V = model.cfg.vocabSize;
    const plan = buildPlan(device, pool, model, tokens, {
      ...this.opts,
      maxBindingBytes,
      kv: { p0: this.pos, rows: this.rows, k: this.k, v: this.v, cos: this.cos, sin: this.sin },
    });
    const program = new Program(device, pipelines);
    device.pushErrorScope('validation');
    let popped = false;
    try {
      for (const op of plan.ops) program.add(op.spec);
      // The last row of the logits: [T, V] in one buffer, or [T, cols] pieces gathered into one [V] row.
      const head = plan.ops.find((op) => op.writes.some((w) => w.name === 'logits'));
      const logits = head?.writes.find((w) => w.name === 'logits');
      if (!head || !logits) throw new Error('decode: the plan has no logits');
      const parts = logits.parts ?? [{ buffer: logits.buffer, col0: 0, cols: V }];
      let x = parts[0].buffer;
      let offset = (T - 1) * V;
      if (parts.length > 1) {
        this.row ??= this.acquire(V * 4, 'kv:logits_row');
        for (const p of parts) {
          program.copyAfter({
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
      program.add(argmaxRow('argmax', { x, out: this.out }, offset, V));
      const encoder = device.createCommandEncoder({ label: 'decode' });
      for (const c of plan.before ?? []) encoder.copyBufferToBuffer(c.src, 0, c.dst, 0, c.bytes);
      program.encode(encoder);
      encoder.copyBufferToBuffer(this.out, 0, this.staging, 0, 4);
      device.queue.submit([encoder.finish()]);
      popped = true;
      const err = await device.popErrorScope();
      if (err) throw new Error(`GPU validation error in decoding: ${err.message}`);
      await this.staging.mapAsync(GPUMapMode.READ);
      const id = new Uint32Array(this.staging.getMappedRange(0, 4).slice(0))[0];
      this.staging.unmap();
      this.pos += T;
      return id;
    } catch (e) {
      if (!popped) await device.popErrorScope().catch(() => null);
      throw e;
    } finally {
      program.dispose();
      plan.release();
    }
  }

  /** Returns the cache to the pool and destroys the tables and the readback buffer. */
  release(): void {
    for (const b of this.pooled) this.ctx.pool.release(b);
    for (const b of this.made) b.destroy();
    this.pooled.length = 0;
    this.made.length = 0;
    this.row = null;
  }

  private acquire(bytes: number, label: string): GPUBuffer {
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const b = this.ctx.pool.acquire(bytes, usage, label);
    this.pooled.push(b);
    return b;
  }

  private keep(b: GPUBuffer): GPUBuffer {
    this.made.push(b);
    return b;
  }
}
