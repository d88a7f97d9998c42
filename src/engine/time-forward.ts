// Benchmark timing of a whole forward: a built plan recorded once, then submitted again and again, each
// submit-to-done timed on the wall clock (no readback). The dispatches go in the command buffers of
// gpu/submit-chunks.ts (as Engine.forward submits them; `chunks` names another count, 1 = one buffer), each submitted
// as soon as it is encoded. Per-op GPU times are ForwardOptions.timing's job.
import type { PipelineCache } from '../gpu/pipelines';
import { Program } from '../gpu/program';
import { chunkRanges, submitInChunks } from '../gpu/submit-chunks';
import type { Plan } from './plan';

/**
 * Submits `plan` `reps` times, waiting for each; releases the plan. Wall ms of each submit-to-done, the dispatches
 * and the command buffers of each forward.
 */
export async function timePlan(
  ctx: { device: GPUDevice; pipelines: PipelineCache; checkAlive(): void },
  plan: Plan,
  reps: number,
  chunks?: number,
): Promise<{ ms: number[]; dispatches: number; buffers: number }> {
  const { device } = ctx;
  const program = new Program(device, ctx.pipelines);
  try {
    const ranges = chunkRanges(plan.ops.length, chunks);
    for (const op of plan.ops) program.add(op.spec);
    const ms: number[] = [];
    for (let r = 0; r < reps; r++) {
      const t0 = performance.now();
      submitInChunks(device, program, ranges, { label: 'forward' });
      await device.queue.onSubmittedWorkDone();
      ms.push(performance.now() - t0);
    }
    ctx.checkAlive();
    return { ms, dispatches: program.dispatchCount, buffers: ranges.length };
  } finally {
    program.dispose();
    plan.release();
  }
}
