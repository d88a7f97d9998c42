// The fused Llama forward's submit (engine/llama-fused.ts): the recorded dispatches once with the copies of the slots it
// reads back (one wait), then, for benchmarks, the same dispatches submitted `time.reps` more times (submit-to-done wall
// ms each, of which `encodeMs` the encoding and `submitMs` the submit calls on the CPU, and `gpuMs` the GPU's span from
// the first dispatch's start to the last one's end, from two timestamps in empty passes around them) and once with each
// dispatch in a timed pass of its own (GPU time per label). The dispatches go in `chunks` command buffers (where not
// given, DEFAULT_CHUNKS of CHUNK_MIN dispatches or more), each submitted as soon as it is encoded, so the GPU starts on
// the first while the CPU encodes the next (the same dispatches in the same order: the same bits). WebGPU validation
// errors are thrown as one line.
import type { OverrideConstants, PipelineCache } from '../gpu/pipelines';
import { type DispatchSpec, Program } from '../gpu/program';
import { type ReadRequest, recordReadback } from '../gpu/readback';
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

/**
 * Command buffers of a forward where the caller names none: DEFAULT_CHUNKS, each of at least CHUNK_MIN dispatches. One
 * buffer left the GPU idle while the CPU encoded and submitted it, 1.1–3.7 ms of each forward's wall time: H100,
 * 2026-11-27, two calls (bench/RESULTS.md "GEMM workgroup order and chunked submits"), SmolLM2-135M T = 128 6.2–7.7 ms
 * in one buffer, 5.5–6.1 in 4, 5.7 in 8; Qwen2.5-0.5B T = 512 23.7–25.0, 22.6–23.3, 22.5–22.6; the GPU's work the same.
 */
export const DEFAULT_CHUNKS = 8;
const CHUNK_MIN = 16;

export async function submitTimed(
  gpu: { device: GPUDevice; pipelines: PipelineCache },
  specs: readonly DispatchSpec[],
  o: { constants?: OverrideConstants; time?: SubmitTiming; chunks?: number },
  reads: readonly ReadRequest[],
): Promise<Float32Array[]> {
  const { device, pipelines } = gpu;
  const byDefault = Math.min(DEFAULT_CHUNKS, Math.floor(specs.length / CHUNK_MIN));
  const chunks = Math.max(1, Math.min(specs.length, Math.floor(o.chunks ?? byDefault)));
  const per = Math.ceil(specs.length / chunks);
  const programs = Array.from(
    { length: Math.ceil(specs.length / per) },
    () => new Program(device, pipelines),
  );
  device.pushErrorScope('validation');
  let thrown: unknown = null;
  let read: Float32Array[] = [];
  // Every chunk encoded and submitted in turn; the readback's copies in the last. CPU ms encoding and submitting.
  const span = o.time?.gpuMs ? gpuSpan(device) : null;
  const submitAll = (label: string, withReads: boolean, timed = false) => {
    let finish: (() => Promise<Float32Array[]>) | null = null;
    let [encodeMs, submitMs] = [0, 0];
    programs.forEach((p, i) => {
      const t0 = performance.now();
      const enc = device.createCommandEncoder({ label });
      if (timed && i === 0) span?.begin(enc);
      p.encode(enc);
      if (timed && i === programs.length - 1) span?.end(enc);
      if (withReads && i === programs.length - 1) finish = recordReadback(device, enc, [...reads]);
      const buffer = enc.finish();
      const t1 = performance.now();
      device.queue.submit([buffer]);
      encodeMs += t1 - t0;
      submitMs += performance.now() - t1;
    });
    return { finish: finish as (() => Promise<Float32Array[]>) | null, encodeMs, submitMs };
  };
  try {
    specs.forEach((s, i) => {
      programs[Math.floor(i / per)].add({ ...s, constants: { ...o.constants, ...s.constants } });
    });
    read = (await submitAll('llama fused', true).finish?.()) ?? [];
    for (let r = 0; r < (o.time?.reps ?? 0); r++) {
      const t0 = performance.now();
      const { encodeMs, submitMs } = submitAll('llama fused (timed)', false, true);
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
      for (const p of programs) p.encode(enc, timer);
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
    for (const p of programs) p.dispose();
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
