// Runs a slot's isolated test (recipes.ts) with a given WGSL source for the slot's file, on any device: a
// pipeline cache of its own whose override is that source, so the engine's cache is never touched.
import { PipelineCache, type ShaderSource } from '../../gpu/pipelines';
import { deviceHarness } from '../harness';
import { recipeFor } from './recipes';
import { type CustomSlotId, customSlot } from './slots';

export interface IsolatedRow {
  /** The shape in words, e.g. 'T=7 d=300'. */
  shape: string;
  /** The output checked. */
  output: string;
  maxAbs: number;
  /** Worst |err| / tolerance over the output (≤ 1 passes; Infinity for NaN, Inf or a write past the end). */
  worstRatio: number;
  /** Elements outside tolerance. */
  bad: number;
  pass: boolean;
  seed: number;
  /** The first mismatches, as compare() writes them (one line when it passes). */
  report: string;
}

export interface IsolatedResult {
  slot: CustomSlotId;
  rows: IsolatedRow[];
  pass: boolean;
  oracle: string;
  tolerance: string;
  /** Wall time, milliseconds. */
  ms: number;
}

const shapeWords = (s: Record<string, number>) =>
  Object.entries(s)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');

/**
 * The isolated test of `slot` with `source` as its file (null: the shipped file), seeds seed, seed + 1, … per
 * shape. A kernel that fails to build or run gives a failing row with the error, never a thrown exception.
 */
export async function runIsolatedTest(
  device: GPUDevice,
  shaders: ShaderSource,
  slotId: CustomSlotId,
  source: string | null,
  seed: number,
): Promise<IsolatedResult> {
  const t0 = performance.now();
  const slot = customSlot(slotId);
  const recipe = recipeFor(slotId);
  const pipelines = new PipelineCache(device, shaders);
  if (source !== null) pipelines.setOverride(slot.kernel.file, source);
  const h = deviceHarness(device, pipelines);
  const rows: IsolatedRow[] = [];
  try {
    for (const [i, shape] of recipe.shapes.entries()) {
      const s = (seed + i) >>> 0;
      try {
        for (const { output, result } of await recipe.run(h, shape, s)) {
          rows.push({
            shape: shapeWords(shape),
            output,
            maxAbs: result.maxAbs,
            worstRatio: result.maxRatio,
            bad: result.bad,
            pass: result.ok,
            seed: s,
            report: result.report,
          });
        }
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        rows.push({
          shape: shapeWords(shape),
          output: '(run)',
          maxAbs: Number.NaN,
          worstRatio: Number.POSITIVE_INFINITY,
          bad: Number.NaN,
          pass: false,
          seed: s,
          report: `the kernel did not run: ${message}`,
        });
      } finally {
        h.release();
      }
    }
  } finally {
    h.release();
  }
  return {
    slot: slotId,
    rows,
    pass: rows.length > 0 && rows.every((r) => r.pass),
    oracle: recipe.oracle,
    tolerance: recipe.tolerance,
    ms: performance.now() - t0,
  };
}
