// The WGSL reference form of every op kind of the registry (src/ops/), filled into its `wgsl` slots: an entry for
// each op kind, holding what each family's reference path runs for it (registry.test.ts fails on an op kind of a
// family's steps that its family cannot run):
// - `step`: the Llama family's form, one step from its input buffers into its output buffer
//   (engine/llama-wgsl-forms.ts WGSL_FORMS: its table's and the op modules' of kernels/ops/); the Llama reference
//   forward (llama-reference.ts) iterates the family's steps with these.
// - `plan`: GPT-NeoX's reference launchers of the plan ops that compute the op (engine/plan-ops.ts REFERENCE_OPS,
//   on the layer's context), read off the family's steps (a step's `plan`: the attention core is scores, probs,
//   ctx, each of which a fused kernel may replace alone); GPT-NeoX's plan (plan.ts) runs each layer op by these.
// - `top`: GPT-NeoX's reference op outside the layers (plan-ops.ts TOP_REFERENCE_OPS: the embedding and the LM head
//   one binding-sized chunk a launch, the final LayerNorm), by its top step's slot.

import { OP_KINDS } from '../ops/descriptors';
import { NEOX_SEQUENTIAL } from '../ops/families';
import { fillSlots, formOf } from '../ops/slots';
import type { OpKind, PlanOp } from '../ops/types';
import type { LayerOp } from './fused-kernels';
import { WGSL_FORMS, type WgslForm } from './llama-wgsl-forms';
import { REFERENCE_OPS, TOP_REFERENCE_OPS, type TopArgs } from './plan-ops';
import type { Launch, LayerCtx } from './plan-types';

/** A GPT-NeoX reference launcher: one plan op on the layer's context. */
export type PlanLaunch = (L: LayerCtx) => Launch;

/** GPT-NeoX's reference launcher of a top op (`embed`, `final_norm`, `logits`) on its own arguments. */
export type TopLaunch<K extends keyof TopArgs = keyof TopArgs> = (typeof TOP_REFERENCE_OPS)[K];

/** What an op kind's `wgsl` slot holds: each family's reference form of it (none where the family lacks the op). */
export interface WgslOpForms {
  step: WgslForm | null;
  plan: Readonly<Partial<Record<LayerOp, PlanLaunch>>>;
  top: TopLaunch | null;
}

const NEOX_TOP = [NEOX_SEQUENTIAL.embed, NEOX_SEQUENTIAL.finalNorm, NEOX_SEQUENTIAL.lmHead];

/** GPT-NeoX's top op of kind `op`, by its step's slot. */
function neoxTop(op: OpKind): TopLaunch | null {
  const step = NEOX_TOP.find((s) => s.op === op);
  if (!step) return null;
  const launch = TOP_REFERENCE_OPS[step.slot as keyof TopArgs];
  if (!launch) throw new Error(`wgsl forms: GPT-NeoX's top op '${step.slot}' has no launcher`);
  return launch;
}

/** The plan ops of GPT-NeoX's layer steps of kind `op` (a step's `plan`, or its slot), with their launchers. */
function neox(op: OpKind): WgslOpForms['plan'] {
  const out: Partial<Record<LayerOp, PlanLaunch>> = {};
  for (const step of NEOX_SEQUENTIAL.layer) {
    if (step.op !== op) continue;
    for (const name of step.plan ?? [step.slot as PlanOp]) {
      const launch = REFERENCE_OPS[name as LayerOp];
      if (!launch) throw new Error(`wgsl forms: GPT-NeoX's plan op '${name}' (${step.slot}) has no launcher`);
      out[name as LayerOp] = launch;
    }
  }
  return out;
}

const llama = (op: OpKind): WgslForm | null => WGSL_FORMS[op] ?? null;

/** Both families' forms of an op kind. */
const both = (op: OpKind): WgslOpForms => ({ step: llama(op), plan: neox(op), top: neoxTop(op) });

/** Both families' forms of every op kind (a family without the op: no form of it there). */
export const WGSL_OP_FORMS: Readonly<Record<OpKind, WgslOpForms>> = Object.fromEntries(
  OP_KINDS.map((op) => [op, both(op)]),
) as Record<OpKind, WgslOpForms>;

fillSlots('wgsl', WGSL_OP_FORMS);

const formsOf = (op: OpKind) => formOf('wgsl', op) as WgslOpForms;

/** The Llama family's reference form of op kind `op`, from its `wgsl` slot (null: the family has no such op). */
export function wgslStepForm(op: OpKind): WgslForm | null {
  return formsOf(op).step;
}

/** The GPT-NeoX step each layer plan op belongs to: its op kind. */
const KIND_OF_PLAN_OP = new Map<string, OpKind>(
  NEOX_SEQUENTIAL.layer.flatMap((step) => (step.plan ?? [step.slot]).map((name) => [name, step.op] as const)),
);

/** GPT-NeoX's reference launcher of layer plan op `name`, from the `wgsl` slot of the op kind of its step. */
export function neoxReferenceLaunch(name: LayerOp): PlanLaunch {
  const op = KIND_OF_PLAN_OP.get(name);
  const launch = op === undefined ? undefined : formsOf(op).plan[name];
  if (!launch)
    throw new Error(`GPT-NeoX plan: op '${name}' has no WGSL reference launcher in the op registry`);
  return launch;
}

/** GPT-NeoX's reference launcher of top op `name` (`embed`, `final_norm`, `logits`), from its step's `wgsl` slot. */
export function neoxTopLaunch<K extends keyof TopArgs>(name: K): TopLaunch<K> {
  const step = NEOX_TOP.find((s) => s.slot === name);
  const launch = step ? formsOf(step.op).top : null;
  if (!launch)
    throw new Error(`GPT-NeoX plan: op '${name}' has no WGSL reference launcher in the op registry`);
  return launch as TopLaunch<K>;
}
