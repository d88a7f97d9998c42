// The forms of each op kind, filled by the parts that own them: the CPU fp64 forms by kernels/cpu/op-fp64.ts; the
// WGSL reference launchers, the fused kernels, the double-float forms and the cause variants by theirs as they
// move onto the registry. The registry sits below them all, so it holds only what they put here.

import { OPS } from './descriptors';
import type { FormKind, FormTypes, OpKind } from './types';

const filled = new Map<FormKind, Map<OpKind, unknown>>();

/** Puts `impl` in op `op`'s `form` slot. Filling a slot twice is a mistake (two definitions of one op). */
export function fillSlot<K extends FormKind>(form: K, op: OpKind, impl: FormTypes[K]): void {
  let m = filled.get(form);
  if (!m) filled.set(form, (m = new Map()));
  if (m.has(op)) throw new Error(`op registry: the ${form} form of '${op}' is filled twice`);
  m.set(op, impl);
}

/**
 * Every form of one kind at once, by the one part that owns them (a table typed on OpKind: a missing op does not
 * compile). The table replaces the form's slots whole, so a module evaluated again (a dev server's hot reload) does
 * not fill them twice.
 */
export function fillSlots<K extends FormKind>(form: K, impls: Readonly<Record<OpKind, FormTypes[K]>>): void {
  filled.set(form, new Map(Object.entries(impls) as [OpKind, FormTypes[K]][]));
}

/**
 * The forms of one kind for the op kinds one part computes (the GPT-NeoX causes' variants): as fillSlots, for a form
 * no descriptor needs of every op kind.
 */
export function fillSlotsOf<K extends FormKind>(
  form: K,
  impls: Readonly<Partial<Record<OpKind, FormTypes[K]>>>,
): void {
  filled.set(form, new Map(Object.entries(impls) as [OpKind, FormTypes[K]][]));
}

/** The `form` of op `op`; throws naming both when nobody filled it. */
export function formOf<K extends FormKind>(form: K, op: OpKind): FormTypes[K] {
  const impl = filled.get(form)?.get(op);
  if (impl === undefined) throw new Error(`op registry: '${op}' has no ${form} form`);
  return impl as FormTypes[K];
}

export function hasForm(form: FormKind, op: OpKind): boolean {
  return filled.get(form)?.has(op) ?? false;
}

/** Each (op, form) a descriptor needs and no part has filled, as `op:form`. */
export function missingForms(): string[] {
  const out: string[] = [];
  for (const d of Object.values(OPS))
    for (const f of d.needs) if (!hasForm(f, d.kind)) out.push(`${d.kind}:${f}`);
  return out;
}
