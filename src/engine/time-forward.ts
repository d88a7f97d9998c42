// Benchmark timing of a whole forward: a built plan recorded once, then submitted again and again, each
// submit-to-done timed on the wall clock (no readback). Per-op GPU times are ForwardOptions.timing's job.
import type { PipelineCache } from '../gpu/pipelines';
import { Program } from '../gpu/program';
import type { Plan } from './plan';

/** Submits `plan` `reps` times, waiting for each; releases the plan. Wall ms of each submit-to-done. */
export async function timePlan(
  ctx: { device: GPUDevice; pipelines: PipelineCache; checkAlive(): void },
  plan: Plan,
  reps: number,
): Promise<{ ms: number[]; dispatches: number }> {
  const { device } = ctx;
  const program = new Program(device, ctx.pipelines);
  try {
    for (const op of plan.ops) program.add(op.spec);
    const ms: number[] = [];
    for (let r = 0; r < reps; r++) {
      const t0 = performance.now();
      const encoder = device.createCommandEncoder({ label: 'forward' });
      program.encode(encoder);
      device.queue.submit([encoder.finish()]);
      await device.queue.onSubmittedWorkDone();
      ms.push(performance.now() - t0);
    }
    ctx.checkAlive();
    return { ms, dispatches: program.dispatchCount };
  } finally {
    program.dispose();
    plan.release();
  }
}
