// A run's local checks with the fp64 oracle in JavaScript: the fallback where double-float on the GPU failed its
// self-test or the adapter is itself a CPU, and the oracle that tests the GPU route (run-checks.test.ts). Each check
// re-runs its steps of the op registry (src/ops/families.ts checkSteps) with their fp64 forms (kernels/cpu/op-fp64.ts).
import '../kernels/cpu/op-fp64';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import type { ModelWeights, NeoXConfig } from '../numeric/types';
import { OPS } from '../ops/descriptors';
import { checkSteps, familyOf } from '../ops/families';
import { formOf } from '../ops/slots';
import type { OpCheck } from './run-checks';
import { rowsOf } from './run-rows';

const exact = (v: Float64Array) => v;

/**
 * The exact output of check `c` on the inputs `get` returns (the run's recorded f32 tensors, every row), in fp64:
 * its rows from..T−1 (default: every row). A row-wise op computes those rows only; a check with a step over the
 * whole sequence (the rotary, the attention core; the whole layer) computes every row and keeps those.
 */
export function exactOnCpu(
  c: OpCheck,
  cfg: NeoXConfig,
  w: ModelWeights,
  tokens: number[],
  get: (slot: string) => Float32Array,
  angles: RotaryAngles,
  from = 0,
): Float64Array {
  const id = c.layer === null ? c.id : c.id.slice(`layers.${c.layer}.`.length);
  const steps = checkSteps(familyOf(cfg), cfg, c.layer, id);
  if (steps.length === 0) throw new Error(`run check '${c.id}': the model's family has no such check`);
  if (from > 0 && steps.some((s) => OPS[s.op].wholeSequence))
    return rowsOf(exactOnCpu(c, cfg, w, tokens, get, angles), tokens.length, from);
  const all = tokens.length;
  const rows = tokens.slice(from);
  const weightsOf: Record<string, unknown> =
    c.layer === null ? (w as unknown as Record<string, unknown>) : { ...w.layers[c.layer] };
  // The first step reads the check's recorded inputs (in its argument order); each later one what the steps wrote
  // (or, in the whole layer, the layer's input).
  const xs = c.inputs.map((slot) => Float64Array.from(rowsOf(get(slot), all, from)));
  const env = new Map<string, Float64Array>(steps[0].inputs.map((name, j) => [name, xs[j]]));
  let out: Float64Array | undefined;
  for (const [i, step] of steps.entries()) {
    out = formOf(
      'fp64',
      step.op,
    )({
      cfg,
      T: rows.length,
      layer: c.layer ?? -1,
      step,
      inputs: i === 0 ? xs : step.inputs.map((name) => env.get(name)!),
      weights: step.weight === undefined ? null : weightsOf[step.weight],
      tokens: rows,
      angles,
      round: exact,
    });
    env.set(step.slot, out);
  }
  return out!;
}
