// The fused Llama forward's submit (engine/llama-fused.ts): the recorded dispatches once, then, for benchmarks, the
// same dispatches submitted `time.reps` more times (submit-to-done wall ms each, of which `encodeMs` the encoding and
// `submitMs` the submit call on the CPU, the GPU idle until the submit has recorded the commands) and once with each dispatch in a timed pass of its own (GPU time per label). WebGPU validation errors are thrown as one line.
import type { OverrideConstants } from '../gpu/pipelines';
import type { DispatchSpec, Program } from '../gpu/program';
import { recordReadback } from '../gpu/readback';
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
): Promise<void> {
  device.pushErrorScope('validation');
  let thrown: unknown = null;
  try {
    for (const s of specs) program.add({ ...s, constants: { ...o.constants, ...s.constants } });
    const enc = device.createCommandEncoder();
    program.encode(enc);
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
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
  if (thrown) throw thrown;
  if (err) throw new Error(`Llama fused: WebGPU validation error: ${err.message}`);
}

/** The slots `want` read back in one submit and one wait (a wait apiece grew with the layers). */
export async function readSlots(
  device: GPUDevice,
  slots: ReadonlyMap<string, { buf: GPUBuffer; floats: number }>,
  want: readonly string[],
): Promise<Map<string, Float32Array>> {
  const enc = device.createCommandEncoder({ label: 'Llama fused taps' });
  const reqs = want.map((key) => slots.get(key) as { buf: GPUBuffer; floats: number });
  const finish = recordReadback(
    device,
    enc,
    reqs.map((r) => ({ src: r.buf, bytes: r.floats * 4 })),
  );
  device.queue.submit([enc.finish()]);
  const read = await finish();
  return new Map(want.map((key, i) => [key, read[i]] as const));
}
