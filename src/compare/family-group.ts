// A group of a Llama-family layer's registry steps computed in fp64 from recorded slots, a cause's variant of one of
// its steps where given: the one computation behind the two-path why's checks (family-why.ts computeGroup) and a
// runs analysis's checks (family-runs-ops.ts computeCheck), and the best residual each cause reaches (both whys).

import { FP64_FORMS } from '../kernels/cpu/op-fp64';
import { roundArray } from '../numeric/round';
import type { LlamaConfig } from '../numeric/types';
import type { Fp64Args, OpStep } from '../ops/types';
import type { TestedCause } from './causes/types';
import type { Candidate } from './family-causes';

/** What a group's steps are computed from. */
export interface GroupSource {
  cfg: LlamaConfig;
  tokens: readonly number[];
  /** The layer of the group (-1 for a step outside the layers). */
  layer: number;
  angles: Fp64Args['angles'];
  /** The weights' owner: the layer's, or the model's for a step outside the layers. */
  weights: Record<string, unknown>;
  /** A slot in the steps' own names as recorded, or null. */
  recorded(slot: string): Float32Array | null;
  /** The slots a step reads (the step's own inputs unless given). */
  inputsOf?(step: OpStep): readonly string[];
  /** The line thrown where a slot read was not recorded. */
  unrecorded(slot: string): string;
}

/**
 * The group's steps (forward order; the last one's output is returned) in fp64, a candidate's way where given.
 * `exact` keeps the model's own step outputs: a step the candidate leaves alone, on inputs it left alone, is read from
 * there instead of computed again, and one computed so is added to it.
 */
export function computeSteps(
  steps: readonly OpStep[],
  x: GroupSource,
  cand: Candidate | null,
  exact: Map<string, Float64Array>,
): Float64Array {
  const values = new Map<string, Float64Array>();
  const changed = new Set<string>();
  const T = x.tokens.length;
  const get = (slot: string): Float64Array => {
    const v = values.get(slot);
    if (v) return v;
    const r = x.recorded(slot);
    if (!r) throw new Error(x.unrecorded(slot));
    const f = Float64Array.from(r);
    values.set(slot, f);
    return f;
  };
  let out: Float64Array = new Float64Array(0);
  for (const s of steps) {
    const v = cand?.applies(s) ? cand : null;
    const kept = exact.get(s.slot);
    if (!v && kept && !s.inputs.some((n) => changed.has(n))) {
      values.set(s.slot, kept);
      out = kept;
      continue;
    }
    let inputs = (x.inputsOf ? x.inputsOf(s) : s.inputs).map(get);
    const halfIn = v?.half?.input ? v.half.format : null;
    if (halfIn) inputs = inputs.map((u) => roundArray(halfIn, u));
    const cfg = v?.cfg ? { ...x.cfg, ...v.cfg } : x.cfg;
    const w = s.weight ? x.weights[s.weight] : null;
    out = (v?.form ?? FP64_FORMS[s.op])({
      cfg,
      T,
      layer: x.layer,
      step: s,
      inputs,
      weights: w,
      tokens: x.tokens,
      angles: x.angles,
      round: (u) => u,
      variant: v?.variant,
    });
    if (v?.half) out = roundArray(v.half.format, out);
    values.set(s.slot, out);
    if (v || s.inputs.some((n) => changed.has(n))) changed.add(s.slot);
    else exact.set(s.slot, out);
  }
  return out;
}

/** Keeps a cause's best (smallest) residual over its candidates, in `best` by the cause's id. */
export function keepBest(best: Map<string, TestedCause>, cand: Candidate, residual: number): void {
  const prev = best.get(cand.id);
  if (!prev || residual < prev.residual)
    best.set(cand.id, { id: cand.id, family: cand.family, words: cand.words, params: cand.params, residual });
}
