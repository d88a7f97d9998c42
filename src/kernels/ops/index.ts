// The op modules (one file per op kind: its forms for the registry, docs/ARCHITECTURE.md "Adding an op"), and how
// the tables of the ops not yet moved take them in: each form's table (kernels/cpu/op-fp64.ts,
// engine/llama-wgsl-forms.ts, kernels/oracle/df-forms.ts) is its own entries and these modules' together, and the
// `fused` slots are filled here. An op kind with neither a module's nor a table's form of a kind it needs is left
// out, and registry.test.ts's missing-forms check names it.

import { fusedSpec } from '../../ops/fused';
import { fillSlotsOf, formOf, hasForm } from '../../ops/slots';
import type { OpKind } from '../../ops/types';
import { ATTENTION, type ATTENTION_FUSED } from './attention';
import type { OpModule } from './forms';
import { QK_NORM, RMSNORM, type RMSNORM_FUSED } from './rmsnorm';
import { GATE_UP, SWIGLU, type SWIGLU_FUSED } from './swiglu';

export const OP_MODULES: readonly OpModule[] = [RMSNORM, QK_NORM, ATTENTION, GATE_UP, SWIGLU];

type ModuleForm = 'fp64' | 'wgsl' | 'df' | 'causes';

/**
 * A form's table whole: the table's own entries and the op modules' forms of that kind. An op kind in both is two
 * definitions of one form: refused.
 */
export function withOpModules<K extends ModuleForm, F extends NonNullable<OpModule[K]>>(
  form: K,
  table: Readonly<Partial<Record<OpKind, F>>>,
): Readonly<Record<OpKind, F>> {
  const out: Partial<Record<OpKind, F>> = { ...table };
  for (const m of OP_MODULES) {
    const f = m[form];
    if (f === undefined) continue;
    if (out[m.kind] !== undefined)
      throw new Error(`op registry: the ${form} form of '${m.kind}' is in its module and in the table`);
    out[m.kind] = f as F;
  }
  // A missing entry stays missing (registry.test.ts names it); the record's type is what every consumer reads.
  return out as Record<OpKind, F>;
}

fillSlotsOf('fused', Object.fromEntries(OP_MODULES.map((m) => [m.kind, m.fused ?? {}])));

/** The launchers each Llama fused kernel's module registers under its switch id (ops/fused.ts). */
export type FusedLaunchers = typeof RMSNORM_FUSED & typeof SWIGLU_FUSED & typeof ATTENTION_FUSED;

/**
 * A fused kernel's launchers, as the registry holds them: the `fused` slot of the first op kind the switch replaces
 * in the Llama family (ops/fused.ts `llama.ops`) whose module registers it. The Llama fused forward reaches its
 * kernels so, not by their modules' names.
 */
export function fusedLaunchers<K extends keyof FusedLaunchers>(id: K): FusedLaunchers[K] {
  for (const op of fusedSpec(id).llama.ops) {
    if (!hasForm('fused', op)) continue;
    const got = (formOf('fused', op) as Readonly<Record<string, unknown>>)[id];
    if (got !== undefined) return got as FusedLaunchers[K];
  }
  throw new Error(`op registry: no op module registers the launchers of fused kernel '${id}'`);
}
