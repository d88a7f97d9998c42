// One forward pass with read-back: a built plan recorded into the command buffers of gpu/submit-chunks.ts (up to 8,
// each submitted as soon as it is encoded; one where per-op timing is asked for), every wanted tap copied (as its op
// finishes) into one mappable staging buffer and read back in one map, per-op timing when asked for. Engine.forward
// builds the plan and calls runForward.
import type { PipelineCache } from '../gpu/pipelines';
import { Program } from '../gpu/program';
import { chunkRanges, type DispatchRange, submitInChunks } from '../gpu/submit-chunks';
import { refineTimings } from '../gpu/timestamp-refine';
import { GpuTimer } from '../gpu/timestamps';
import type { HiddenDump, NeoXConfig } from '../numeric/types';
import type { Plan, TapPart } from './plan';
import { EngineError, type ForwardOptions, type ForwardResult } from './types';

/** Mappable readback buffers reused across forwards (creating a mappable buffer per call is slow). */
export class StagingBuffers {
  private free: GPUBuffer[] = [];

  constructor(private readonly device: GPUDevice) {}

  /** A readback buffer of at least `bytes`. */
  take(bytes: number): GPUBuffer {
    const size = Math.max(256, Math.ceil(bytes / 256) * 256);
    const i = this.free.findIndex((b) => b.size >= size && b.size <= 2 * size);
    if (i >= 0) return this.free.splice(i, 1)[0];
    return this.device.createBuffer({
      size,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      label: 'forward readback',
    });
  }

  give(b: GPUBuffer): void {
    this.free.push(b);
    while (this.free.length > 4) this.free.shift()?.destroy();
  }

  /** Destroys every cached buffer. */
  trim(): void {
    for (const b of this.free.splice(0)) b.destroy();
  }
}

/** What a forward needs from the engine. */
export interface ForwardContext {
  device: GPUDevice;
  pipelines: PipelineCache;
  staging: StagingBuffers;
  /** Throws the device's loss, if it is lost. */
  checkAlive(): void;
  /** After a failure: waits a moment for a device loss to be reported, then throws it if there is one. */
  settleLoss(): Promise<void>;
}

/**
 * Runs `plan` (over T tokens of a model with config `cfg`) and reads back the dump and the taps `opts` asks
 * for; releases the plan. `t0` is when the call began (performance.now()), for the wall times. With `recorded`
 * (the plan's compiled program, kept for replays) the plan's dispatches are not compiled again and neither the
 * plan nor the program is released.
 */
export async function runForward(
  ctx: ForwardContext,
  plan: Plan,
  cfg: NeoXConfig,
  T: number,
  opts: ForwardOptions,
  t0: number,
  recorded?: Program,
): Promise<ForwardResult> {
  const { device } = ctx;
  // The command buffers: the rule's or opts.submitChunks; one with per-op timing (each op its own timed pass).
  let ranges: DispatchRange[];
  try {
    ranges = chunkRanges(plan.ops.length, opts.submitChunks);
  } catch (e) {
    if (!recorded) plan.release();
    throw new EngineError((e as Error).message, 'input');
  }
  if (opts.timing) ranges = [[0, plan.ops.length]];
  const program = recorded ?? new Program(device, ctx.pipelines);
  recorded?.clearCopies();
  // Rows of each tap read back: all T, or the logits' last row alone when asked.
  const lastOnly = (name: string) => name === 'logits' && opts.logits === 'last';
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
  const copies: { after: string; src: GPUBuffer; srcOffset: number; offset: number; bytes: number }[] = [];
  let stagingBytes = 0;
  let stage: GPUBuffer | null = null;
  const wall: Record<string, number> = {};
  const timer = opts.timing ? new GpuTimer(device, plan.ops.length) : null;
  let popped = false;
  device.pushErrorScope('validation');
  try {
    if (!recorded) for (const op of plan.ops) program.add(op.spec);
    for (const op of plan.ops) {
      for (const w of op.writes) {
        if (!want.has(w.name)) continue;
        // The last row only: [1, cols] of each piece, from row T − 1.
        const last = lastOnly(w.name);
        const rows = last ? 1 : T;
        const sources = w.parts
          ? w.parts.map((p) => ({
              buffer: p.buffer,
              bytes: rows * p.cols * 4,
              srcOffset: last ? (T - 1) * p.cols * 4 : 0,
            }))
          : [
              {
                buffer: w.buffer,
                bytes: (w.floats / T) * rows * 4,
                srcOffset: last ? (T - 1) * (w.floats / T) * 4 : 0,
              },
            ];
        const offsets = sources.map((src) => {
          const offset = stagingBytes;
          copies.push({
            after: op.spec.label,
            src: src.buffer,
            srcOffset: src.srcOffset,
            offset,
            bytes: src.bytes,
          });
          stagingBytes += Math.ceil(src.bytes / 256) * 256;
          return offset;
        });
        staging.set(w.name, { offsets, floats: (w.floats / T) * rows, parts: w.parts });
      }
    }
    for (const name of want) if (!staging.has(name)) throw new EngineError(`unknown tap '${name}'`);
    stage = ctx.staging.take(stagingBytes);
    for (const c of copies)
      program.copyAfter({
        after: c.after,
        src: c.src,
        srcOffset: c.srcOffset,
        dst: stage,
        dstOffset: c.offset,
        bytes: c.bytes,
      });
    wall.plan = performance.now() - t0;
    submitInChunks(device, program, ranges, { label: 'forward', timer, last: (enc) => timer?.resolve(enc) });
    wall.record = performance.now() - t0 - wall.plan;
    // The error scope and the map in one wait (each is a round trip to the GPU's event queue).
    const scope = device.popErrorScope();
    popped = true;
    const [err, mapErr] = await Promise.all([
      scope,
      stage.mapAsync(GPUMapMode.READ, 0, stagingBytes).then(
        () => null,
        (e: unknown) => e,
      ),
    ]);
    if (err) throw new EngineError(`GPU validation error in forward: ${err.message}`);
    if (mapErr) throw mapErr;
    const read = new Map<string, Float32Array>();
    wall.gpu = performance.now() - t0 - wall.plan - wall.record;
    const mapped = stage.getMappedRange(0, stagingBytes);
    for (const [name, st] of staging) {
      const rows = lastOnly(name) ? 1 : T;
      const sizes = st.parts ? st.parts.map((p) => rows * p.cols) : [st.floats];
      const pieces = st.offsets.map((o, i) => new Float32Array(mapped.slice(o, o + sizes[i] * 4)));
      read.set(name, st.parts ? joinColumns(pieces, st.parts, rows, st.floats / rows) : pieces[0]);
    }
    stage.unmap();
    wall.read = performance.now() - t0 - wall.plan - wall.record - wall.gpu;
    ctx.checkAlive();
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
    if (!popped) await device.popErrorScope().catch(() => null);
    await ctx.settleLoss();
    throw e;
  } finally {
    if (stage) ctx.staging.give(stage);
    timer?.destroy();
    if (!recorded) {
      program.dispose();
      plan.release();
    }
  }
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
