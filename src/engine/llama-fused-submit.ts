// The fused Llama forward's submit (engine/llama-fused.ts): the recorded dispatches once with the copies of the slots it
// reads back (one submit, one wait), then, for benchmarks, the same dispatches submitted `time.reps` more times
// (submit-to-done wall ms each, of which `encodeMs` the encoding and `submitMs` the submit call on the CPU, the GPU idle
// until the submit has recorded the commands) and once with each dispatch in a timed pass of its own (GPU time per
// label). WebGPU validation errors are thrown as one line.
import type { OverrideConstants } from '../gpu/pipelines';
import type { DispatchSpec, Program } from '../gpu/program';
import { type ReadRequest, recordReadback } from '../gpu/readback';
import { GpuTimer, type PassTiming } from '../gpu/timestamps';

export async function submitTimed(
  device: GPUDevice,
  program: Program,
  specs: readonly DispatchSpec[],
  o: {
    constants?: OverrideConstants;
    time?: {
      reps: number;
      ms: number[];
      encodeMs?: number[];
      submitMs?: number[];
      ops?: PassTiming[] | null;
    };
  },
  reads: readonly ReadRequest[],
): Promise<Float32Array[]> {
  device.pushErrorScope('validation');
  let thrown: unknown = null;
  let read: Float32Array[] = [];
  try {
    for (const s of specs) program.add({ ...s, constants: { ...o.constants, ...s.constants } });
    const enc = device.createCommandEncoder();
    program.encode(enc);
    const finish = recordReadback(device, enc, [...reads]);
    device.queue.submit([enc.finish()]);
    read = await finish();
    for (let r = 0; r < (o.time?.reps ?? 0); r++) {
      const t0 = performance.now();
      const again = device.createCommandEncoder({ label: 'llama fused (timed)' });
      program.encode(again);
      const buffer = again.finish();
      const t1 = performance.now();
      o.time?.encodeMs?.push(t1 - t0);
      device.queue.submit([buffer]);
      o.time?.submitMs?.push(performance.now() - t1);
      await device.queue.onSubmittedWorkDone();
      o.time?.ms.push(performance.now() - t0);
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
  }
  const err = await device.popErrorScope();
  // A validation error first: a readback after it fails for its sake.
  if (err) throw new Error(`Llama fused: WebGPU validation error: ${err.message}`);
  if (thrown) throw thrown;
  return read;
}
