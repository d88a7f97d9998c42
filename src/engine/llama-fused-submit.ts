// The fused Llama forward's submit (engine/llama-fused.ts): the recorded dispatches once with the copies of the slots it
// reads back (one wait), then, for benchmarks, the same dispatches submitted `time.reps` more times (submit-to-done wall
// ms each, of which `encodeMs` the encoding and `submitMs` the submit calls on the CPU, and `gpuMs` the GPU's span from
// the first dispatch's start to the last one's end, from two timestamps in empty passes around them) and once with each
// dispatch in a timed pass of its own (GPU time per label). The dispatches go in `chunks` command buffers (where not
// given, gpu/submit-chunks.ts's rule: up to 8 of 16 dispatches or more), each submitted as soon as it is encoded, so
// the GPU starts on the first while the CPU encodes the next (the same dispatches in the same order: the same bits).
// WebGPU validation errors are thrown as one line.
import type { OverrideConstants, PipelineCache } from '../gpu/pipelines';
import { type DispatchSpec, Program } from '../gpu/program';
import { type ReadRequest, recordReadback } from '../gpu/readback';
import { chunkRanges, submitInChunks } from '../gpu/submit-chunks';
import { GpuTimer, type PassTiming } from '../gpu/timestamps';

export interface SubmitTiming {
  reps: number;
  ms: number[];
  encodeMs?: number[];
  submitMs?: number[];
  /** Per rep: GPU ms from a timestamp before the first dispatch to one after the last (where timestamps exist). */
  gpuMs?: number[];
  ops?: PassTiming[] | null;
}

export async function submitTimed(
  gpu: { device: GPUDevice; pipelines: PipelineCache },
  specs: readonly DispatchSpec[],
  o: { constants?: OverrideConstants; time?: SubmitTiming; chunks?: number },
  reads: readonly ReadRequest[],
): Promise<Float32Array[]> {
  const { device, pipelines } = gpu;
  const ranges = chunkRanges(specs.length, o.chunks);
  const program = new Program(device, pipelines);
  device.pushErrorScope('validation');
  let thrown: unknown = null;
  let read: Float32Array[] = [];
  const span = o.time?.gpuMs ? gpuSpan(device) : null;
  try {
    for (const s of specs) program.add({ ...s, constants: { ...o.constants, ...s.constants } });
    // Every chunk encoded and submitted in turn; the readback's copies in the last.
    let finish: (() => Promise<Float32Array[]>) | null = null;
    submitInChunks(device, program, ranges, {
      label: 'llama fused',
      last: (enc) => {
        finish = recordReadback(device, enc, [...reads]);
      },
    });
    read = (await (finish as (() => Promise<Float32Array[]>) | null)?.()) ?? [];
    for (let r = 0; r < (o.time?.reps ?? 0); r++) {
      const t0 = performance.now();
      const { encodeMs, submitMs } = submitInChunks(device, program, ranges, {
        label: 'llama fused (timed)',
        first: span?.begin,
        last: span?.end,
      });
      o.time?.encodeMs?.push(encodeMs);
      o.time?.submitMs?.push(submitMs);
      await device.queue.onSubmittedWorkDone();
      o.time?.ms.push(performance.now() - t0);
      const gpu = await span?.read();
      if (gpu !== undefined && gpu !== null) o.time?.gpuMs?.push(gpu);
    }
    if (o.time?.ops) {
      const timer = new GpuTimer(device, specs.length);
      const enc = device.createCommandEncoder({ label: 'llama fused (per op)' });
      program.encode(enc, timer);
      timer.resolve(enc);
      device.queue.submit([enc.finish()]);
      const passes = await timer.read();
      timer.destroy();
      if (passes) o.time.ops.push(...passes);
      else o.time.ops = null;
    }
  } catch (e) {
    thrown = e;
  } finally {
    program.dispose();
    span?.destroy();
  }
  const err = await device.popErrorScope();
  // A validation error first: a readback after it fails for its sake.
  if (err) throw new Error(`Llama fused: WebGPU validation error: ${err.message}`);
  if (thrown) throw thrown;
  return read;
}

/**
 * Two timestamps around a submit's dispatches, each in an empty compute pass (the first pass's start, the last one's
 * end): the GPU's span of a forward without the CPU's encoding and submit. Null where the device has no timestamps.
 */
function gpuSpan(device: GPUDevice) {
  if (!device.features.has('timestamp-query')) return null;
  const set = device.createQuerySet({ type: 'timestamp', count: 2 });
  const resolved = device.createBuffer({
    size: 16,
    usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
  });
  const mapped = device.createBuffer({ size: 16, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
  const mark = (enc: GPUCommandEncoder, index: 0 | 1) =>
    enc
      .beginComputePass({
        label: index ? 'span end' : 'span begin',
        timestampWrites: index
          ? { querySet: set, endOfPassWriteIndex: 1 }
          : { querySet: set, beginningOfPassWriteIndex: 0 },
      })
      .end();
  return {
    begin: (enc: GPUCommandEncoder) => mark(enc, 0),
    end: (enc: GPUCommandEncoder) => {
      mark(enc, 1);
      enc.resolveQuerySet(set, 0, 2, resolved, 0);
      enc.copyBufferToBuffer(resolved, 0, mapped, 0, 16);
    },
    /** The last span in ms (after the submit is done). */
    read: async (): Promise<number | null> => {
      await mapped.mapAsync(GPUMapMode.READ);
      const t = new BigInt64Array(mapped.getMappedRange().slice(0));
      mapped.unmap();
      const ns = Number(t[1] - t[0]);
      return ns > 0 ? ns / 1e6 : null;
    },
    destroy: () => {
      set.destroy();
      resolved.destroy();
      mapped.destroy();
    },
  };
}
