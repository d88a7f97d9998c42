// Honest per-op times from quantized timestamps. After a forward timed one pass per op, the adapter's step is
// detected from the raw timestamps (detectQuantumNs); every op shorter than a few steps is then run again, its
// dispatch repeated N times in one timed pass, and its time is the total over N (perOpTime). Up to two rounds:
// an op read as 0 gets a first guess of repetitions, then, if its total is still within a few steps, enough
// for its measured time. Each PassTiming says how often it ran, whether it is still quantized, and the step.
import type { Program } from './program';
import { detectQuantumNs, perOpTime, repetitionsFor } from './timestamp-quantum';
import { GpuTimer, type PassTiming } from './timestamps';

export interface RefineOptions {
  /** Use this step (ns) instead of the detected one: tests force repetition on an unquantized adapter. */
  quantumNs?: number;
  /** An op must span this many steps to count as measured (default 8). */
  minQuanta?: number;
  /** Most repetitions of one dispatch (default 256). */
  maxReps?: number;
}

/** The step to use: the forced one, else the one detected from `raw` (null: nothing to tell it from). */
export function timestampQuantum(raw: readonly bigint[], forced?: number): number | null {
  if (forced !== undefined) {
    if (!(forced >= 1)) throw new Error(`timestamp quantum must be ≥ 1 ns, got ${forced}`);
    return forced;
  }
  return detectQuantumNs([...raw].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Per-op times for `first` (one timed pass per dispatch of `program`, in order, from a timer whose raw() holds
 * its timestamps), with the ops shorter than minQuanta steps re-timed by repetition. `program` must still
 * hold the dispatches (and their buffers) that produced `first`.
 */
export async function refineTimings(
  device: GPUDevice,
  program: Program,
  first: PassTiming[],
  raw: readonly bigint[],
  opts: RefineOptions = {},
): Promise<PassTiming[]> {
  const minQuanta = opts.minQuanta ?? 8;
  const maxReps = opts.maxReps ?? 256;
  const quantumNs = timestampQuantum(raw, opts.quantumNs);
  const out = first.map((t) => ({ ...t, repeats: 1, ...flag(t.ns, 1) }));
  function flag(totalNs: number, reps: number) {
    const t = perOpTime(totalNs, reps, quantumNs, minQuanta);
    return { ns: t.ns, quantized: t.quantized, quantumNs };
  }
  for (let round = 0; round < 2; round++) {
    // Labels are unique per plan; repeats per label, for the ops still quantized that may repeat more.
    const want = new Map<string, number>();
    out.forEach((t) => {
      if (!t.quantized || t.repeats >= maxReps) return;
      // Read as 0: first guess a quarter step; still 0 after repeating: as many as allowed.
      const est = t.ns > 0 ? t.ns : t.repeats > 1 ? 0 : (quantumNs ?? 1) / 4;
      const reps = Math.max(t.repeats + 1, repetitionsFor(est, quantumNs, minQuanta, maxReps));
      want.set(t.label, Math.min(maxReps, reps));
    });
    if (want.size === 0) break;
    const timer = new GpuTimer(device, want.size);
    try {
      if (!timer.available) break;
      const encoder = device.createCommandEncoder({ label: 'timing by repetition' });
      program.encodeRepeated(encoder, timer, (label) => want.get(label) ?? 0);
      timer.resolve(encoder);
      device.queue.submit([encoder.finish()]);
      const passes = (await timer.read()) ?? [];
      for (const p of passes) {
        const reps = want.get(p.label)!;
        const i = out.findIndex((t) => t.label === p.label);
        out[i] = { ...out[i], repeats: reps, ...flag(p.ns, reps) };
      }
    } finally {
      timer.destroy();
    }
  }
  return out;
}
