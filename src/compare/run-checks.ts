// The local checks of a run (docs/RUNS.md, "which taps feed which check"): each op of the forward re-run exactly by
// the oracle from the input the run itself recorded, and compared with the output the run recorded. Ops Hugging
// Face does not expose as modules are checked from the taps around them: the attention core (rotary, scores,
// softmax, values) from `query_key_value:out` to `attention.dense:in`, and the residual adds from a layer's input,
// attention and MLP outputs to its output (or to `post_attention_layernorm:in` in the sequential style). A check
// runs only where the run holds its inputs and output; what is missing narrows the answer, and is listed. The checks
// are the family's steps that carry one (src/ops/families.ts: each step's check op, id, words, module and inputs).
import { inputSlot } from '../model/run-names';
import type { NeoXConfig } from '../numeric/types';
import { familyOf } from '../ops/families';
import type { CheckOp, OpStep } from '../ops/types';

export interface OpCheck {
  /** Unique within a run: 'layers.2.residual_mlp', 'embed'. */
  id: string;
  op: CheckOp;
  layer: number | null;
  /** The Hugging Face module path the op lives in ('gpt_neox.layers.2.mlp.act', 'gpt_neox.layers.2' for the adds). */
  module: string;
  /** The op in words, for the verdict's sentence. */
  what: string;
  /** Slots the op reads (in the oracle's argument order) and the slot it writes. */
  inputs: string[];
  output: string;
}

/** A check that could not run, and what it lacked. */
export interface MissingCheck {
  id: string;
  module: string;
  lacks: string[];
}

/** Every check a model has, in forward order, for a run that records the slots `has` says it does. */
export function runChecks(
  cfg: NeoXConfig,
  has: (slot: string) => boolean,
  lmHead: 'embed_out' | 'lm_head' = 'embed_out',
  /** Layers whose whole-layer check runs even where every op is checked (the floor's run, for the others). */
  wholeLayers: ReadonlySet<number> = new Set(),
): { checks: OpCheck[]; missing: MissingCheck[] } {
  const all: OpCheck[] = [];
  // Every check is a step's of the family (ops/families.ts): its op, id, words and module, its inputs and output.
  const spec = familyOf(cfg);
  const top = (step: OpStep, inputs: string[], module = step.module!) => {
    const c = step.check!;
    all.push({ id: c.id, op: c.op, layer: null, module, what: c.what, inputs, output: step.slot });
  };
  top(spec.embed, []);
  for (let i = 0; i < cfg.numLayers; i++) {
    const p = `layers.${i}`;
    const m = `${spec.layerPrefix}.${i}`;
    const x = inputSlot(i);
    const s = (n: string) => (n === 'in' ? x : `${p}.${n}`);
    for (const step of spec.layer) {
      const c = step.check;
      if (!c) continue;
      const inputs = (c.inputs ?? step.inputs).map(s);
      if (c.firstIfHeld && has(s(c.firstIfHeld))) inputs[0] = s(c.firstIfHeld);
      const module = c.module ?? step.module ?? '';
      all.push({
        id: s(c.id),
        op: c.op,
        layer: i,
        module: module ? `${m}.${module}` : m,
        what: c.what,
        inputs,
        output: s(step.slot),
      });
    }
    all.push({
      id: s('layer'),
      op: 'layer',
      layer: i,
      module: m,
      what: spec.wholeLayer!,
      inputs: [x],
      output: s('out'),
    });
  }
  top(spec.finalNorm, [inputSlot(cfg.numLayers)]);
  top(spec.lmHead, ['final_norm'], lmHead);
  const checks: OpCheck[] = [];
  const missing: MissingCheck[] = [];
  const lacking = (c: OpCheck) => [...c.inputs, c.output].filter((slot) => !has(slot));
  for (const c of all) {
    const lacks = lacking(c);
    if (lacks.length > 0) missing.push({ id: c.id, module: c.module, lacks });
    // The whole layer re-run only where its ops cannot all be checked one by one (it adds nothing then, and costs
    // a forward of the layer).
    else if (
      c.op !== 'layer' ||
      wholeLayers.has(c.layer!) ||
      all.some((o) => o.layer === c.layer && o.op !== 'layer' && lacking(o).length > 0)
    )
      checks.push(c);
  }
  return { checks, missing };
}
