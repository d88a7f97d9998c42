// The checks of a Llama-family run (docs/RUNS.md, "Runs of the Llama family"), read off the op registry: every step
// of every layer whose output the run records, checked from the run's own recorded inputs. Where a step's inputs are
// not recorded (the rotated q and k, which no Hugging Face module returns), the step is checked together with the
// steps that compute them, as family-why.ts familyChecks groups a fused path's ops: the smallest recorded group.
// The embedding, the final norm and the LM head are checks of their own. Each check's group is computed in fp64 by
// the registry's forms (kernels/cpu/op-fp64.ts), a cause's variant of one of its steps where one is given.

import { inputSlot } from '../model/run-names';
import type { Precision } from '../numeric/precision';
import type { LlamaConfig, LlamaWeights } from '../numeric/types';
import { OPS } from '../ops/descriptors';
import { LLAMA_FAMILY, layerSteps, libraryOpOf } from '../ops/families';
import type { CheckOp, Fp64Args, LibraryGroup, OpStep } from '../ops/types';
import { GROUP_PRODUCT } from './causes/types';
import type { Candidate } from './family-causes';
import { computeSteps } from './family-group';
import { familyChecks } from './family-why';
import type { MissingCheck, OpCheck } from './run-checks';
import type { RunInput } from './runs-input';

/** One check of a Llama-family run: an OpCheck (the report's fields) and the registry steps it computes. */
export interface FamilyRunCheck extends OpCheck {
  /** The steps of the group in forward order (the last writes `output`); a top check's one step. */
  steps: OpStep[];
}

/** The HF module a step lives in, in the dump's own words (`model.layers.1.mlp.down_proj`): its own, or its container's. */
function moduleOf(step: OpStep, layer: number): string {
  const p = `${LLAMA_FAMILY.layerPrefix}.${layer}`;
  const module = step.module ?? step.container ?? '';
  return module === '' ? p : `${p}.${module}`;
}

/**
 * The report's op kind of a group of steps (run-checks.ts OracleOp: GPT-NeoX's names, which the page's words read):
 * its library op (ops/families.ts libraryOpOf), a fused group's product.
 */
function oracleOpOf(steps: readonly OpStep[], whole: boolean): OpCheck['op'] {
  if (whole) return 'layer';
  const op = libraryOpOf(steps);
  return op in GROUP_PRODUCT ? GROUP_PRODUCT[op as LibraryGroup] : (op as CheckOp);
}

/**
 * Every check a Llama-family run can have, in forward order, from the slots it records (`has`, the registry's slot
 * names): the embedding, each layer's steps (grouped where their inputs are not recorded), the final norm, the LM
 * head; and those it cannot have, with the slots they lack.
 */
export function familyRunChecks(
  cfg: LlamaConfig,
  has: (slot: string) => boolean,
): { checks: FamilyRunCheck[]; missing: MissingCheck[] } {
  const checks: FamilyRunCheck[] = [];
  const missing: MissingCheck[] = [];
  const spec = LLAMA_FAMILY;
  const L = cfg.numLayers;
  const all = layerSteps(spec, cfg);
  // A top check is named by its library op (GPT-NeoX's ids: embed, final_norm, lm_head) and its op's words.
  const top = (step: OpStep, inputs: string[]) => {
    if (!has(step.slot)) return;
    const id = libraryOpOf([step]) as CheckOp;
    const lacks = inputs.filter((s) => !has(s));
    if (lacks.length > 0) {
      missing.push({ id, module: step.module ?? id, lacks });
      return;
    }
    checks.push({
      id,
      op: id,
      layer: null,
      module: step.module ?? id,
      what: OPS[step.op].title,
      inputs,
      output: step.slot,
      steps: [step],
    });
  };
  top(spec.embed, []);
  for (let i = 0; i < L; i++) {
    const x = inputSlot(i);
    const slot = (s: string) => (s === 'in' ? x : `layers.${i}.${s}`);
    for (const c of familyChecks(
      cfg,
      i,
      (s) => has(slot(s)),
      () => true,
    )) {
      const members = c.steps;
      const inGroup = new Set(members.map((s) => s.slot));
      const inputs = [...new Set(members.flatMap((s) => s.inputs).filter((s) => !inGroup.has(s)))].map(slot);
      const last = members[members.length - 1];
      const whole = members.length === all.length;
      const module = whole ? `${spec.layerPrefix}.${i}` : moduleOf(last, i);
      const lacks = inputs.filter((s) => !has(s));
      if (lacks.length > 0) {
        missing.push({ id: c.id, module, lacks });
        continue;
      }
      const titles = [...new Set(members.map((s) => OPS[s.op].title))];
      const what = whole
        ? 'the whole layer'
        : members.length === 1
          ? titles[0]
          : `${titles.slice(0, -1).join(', ')} and ${titles[titles.length - 1]}`;
      checks.push({
        id: whole ? `layers.${i}.layer` : c.id,
        op: oracleOpOf(members, whole),
        layer: i,
        module,
        what,
        inputs,
        output: slot(c.slot),
        steps: members,
      });
    }
  }
  top(spec.finalNorm, [inputSlot(L)]);
  top(spec.lmHead, [...spec.lmHead.inputs]);
  return { checks, missing };
}

/** One run as the analysis (family-runs.ts) holds it. */
export interface FamilyRun {
  id: string;
  input: RunInput;
  precision: Precision;
  checks: FamilyRunCheck[];
  missing: MissingCheck[];
  slot(s: string): Float32Array | null;
  name(s: string): string;
}

/** What a check's group is computed from: the model, the tokens, the rotary angles. */
export interface GroupContext {
  cfg: LlamaConfig;
  weights: LlamaWeights;
  tokens: readonly number[];
  angles: Fp64Args['angles'];
}

/**
 * A check's group in fp64 from the recorded slots (`recorded`, the registry's full slot names), a cause's variant
 * where given. `exact` keeps the model's own step outputs of this run: a step the candidate leaves alone, on inputs
 * it left alone, is read from there instead of computed again (family-group.ts computeSteps, as family-why.ts).
 */
export function computeCheck(
  c: FamilyRunCheck,
  x: GroupContext,
  recorded: (slot: string) => Float32Array | null,
  cand: Candidate | null = null,
  exact: Map<string, Float64Array> = new Map(),
): Float64Array {
  const slotOf = (s: string) =>
    c.layer === null ? s : s === 'in' ? inputSlot(c.layer) : `layers.${c.layer}.${s}`;
  const owner = c.layer === null ? x.weights : x.weights.layers[c.layer];
  return computeSteps(
    c.steps,
    {
      cfg: x.cfg,
      tokens: x.tokens,
      layer: c.layer ?? -1,
      angles: x.angles,
      weights: owner as unknown as Record<string, unknown>,
      recorded: (s) => recorded(slotOf(s)),
      // A top step reads the slots its check names (the final norm's input is the last layer's output).
      inputsOf: c.layer === null ? () => c.inputs : undefined,
      unrecorded: (s) => `${c.id} reads '${slotOf(s)}', which the run did not record`,
    },
    cand,
    exact,
  );
}
