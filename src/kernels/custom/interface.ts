// A kernel's binding interface read from its WGSL (wgsl_reflect), never from comments or descriptors: the
// @group(0) bindings (number, name, address space, access, type), the override constants and the compute
// entry points. A custom source must present exactly the interface of the shipped kernel it replaces — the
// launcher binds the same buffers and sets the same constants — or it is refused with a message naming the
// binding (or constant) that differs.
import { type TypeInfo, WgslReflect } from 'wgsl_reflect/wgsl_reflect.module.js';
import { type KernelDef, kernelCode, type ShaderSource } from '../../gpu/pipelines';
import { type CustomSlotId, customSlot, slotKernels } from './slots';

export interface BindingInfo {
  group: number;
  binding: number;
  name: string;
  /** 'uniform', 'storage, read', 'storage, read_write', or another resource kind. */
  space: string;
  /** The declared type in words: 'array<f32>', 'Params { rows: u32, d: u32, eps: f32, _pad: u32 }'. */
  type: string;
}

export interface KernelInterface {
  bindings: BindingInfo[];
  overrides: { name: string; type: string }[];
  /** Names of the @compute entry points. */
  entryPoints: string[];
}

export class InterfaceReadError extends Error {
  override name = 'InterfaceReadError';
}

const SPACES = ['uniform', 'storage', 'immediate', 'texture', 'sampler', 'storage texture'];

function typeText(t: TypeInfo | null): string {
  if (!t) return '?';
  const members = (t as { members?: { name: string; type: TypeInfo }[] }).members;
  if (t.isStruct && members)
    return `${t.name} { ${members.map((m) => `${m.name}: ${typeText(m.type)}`).join(', ')} }`;
  const format = (t as { format?: TypeInfo | null }).format;
  if (format) return `${t.name}<${typeText(format)}>`;
  return t.name;
}

/**
 * wgsl_reflect reads only literal @group / @binding numbers; WGSL allows const-expressions there
 * (`@binding(GEMM_IN + 1u)`). This folds sums and differences of integer literals and module-scope integer
 * `const`s into literals first (anything else is left for the parser to refuse).
 */
export function foldAttributeConsts(code: string): string {
  const consts = new Map<string, number>();
  for (const m of code.matchAll(/\bconst\s+([A-Za-z_]\w*)\s*(?::\s*[iu]32\s*)?=\s*(\d+)[iu]?\s*;/g))
    consts.set(m[1], Number(m[2]));
  return code.replace(/@(binding|group)\(\s*([^()]*?)\s*\)/g, (all, attr: string, expr: string) => {
    if (/^\d+[iu]?$/.test(expr)) return all;
    const terms = expr.split(/\s*([+-])\s*/);
    let total = 0;
    let sign = 1;
    for (const [i, t] of terms.entries()) {
      if (i % 2 === 1) {
        sign = t === '-' ? -1 : 1;
        continue;
      }
      const lit = /^(\d+)[iu]?$/.exec(t);
      const v = lit ? Number(lit[1]) : consts.get(t);
      if (v === undefined) return all;
      total += sign * v;
    }
    return `@${attr}(${total})`;
  });
}

/** The interface of a whole WGSL module (includes + file). Throws InterfaceReadError when it does not parse. */
export function reflectInterface(code: string): KernelInterface {
  let r: WgslReflect;
  try {
    r = new WgslReflect(foldAttributeConsts(code));
  } catch (e) {
    throw new InterfaceReadError(`the WGSL could not be read: ${e instanceof Error ? e.message : String(e)}`);
  }
  const bindings: BindingInfo[] = [];
  r.getBindGroups().forEach((group, g) => {
    for (const v of group ?? []) {
      if (!v) continue;
      const base = SPACES[v.resourceType] ?? `resource ${v.resourceType}`;
      const space = base === 'storage' ? `storage, ${v.access || 'read'}` : base;
      bindings.push({ group: g, binding: v.binding, name: v.name, space, type: typeText(v.type) });
    }
  });
  return {
    bindings,
    overrides: r.overrides.map((o) => ({ name: o.name, type: o.type?.name ?? '?' })),
    entryPoints: r.entry.compute.map((f) => f.name),
  };
}

/** A shipped kernel's interface (cached per kernel: the shipped text does not change while the page runs). */
const shippedCache = new Map<string, KernelInterface>();
export function shippedInterface(kernel: KernelDef, shaders: ShaderSource): KernelInterface {
  let i = shippedCache.get(kernel.name);
  if (!i) {
    i = reflectInterface(kernelCode(kernel, shaders));
    shippedCache.set(kernel.name, i);
  }
  return i;
}

const describe = (b: BindingInfo) => `var<${b.space}> ${b.name}: ${b.type}`;

/**
 * Everything in `got` that does not match `want`, one line each, naming the binding or constant; empty when
 * the interfaces match. Extra override constants (new tunables with defaults) are allowed.
 */
export function interfaceProblems(want: KernelInterface, got: KernelInterface): string[] {
  const out: string[] = [];
  if (!got.entryPoints.includes('main')) out.push('there is no @compute entry point named main');
  const key = (b: BindingInfo) => `${b.group}/${b.binding}`;
  const gotBy = new Map(got.bindings.map((b) => [key(b), b]));
  for (const w of want.bindings) {
    const g = gotBy.get(key(w));
    const at = `@group(${w.group}) @binding(${w.binding})`;
    if (!g) {
      out.push(`binding ${w.binding} '${w.name}' is missing: the slot needs ${at} ${describe(w)}`);
      continue;
    }
    if (g.name !== w.name)
      out.push(`binding ${w.binding} is named '${g.name}': the slot calls it '${w.name}' (${describe(w)})`);
    else if (g.space !== w.space || g.type !== w.type)
      out.push(`binding ${w.binding} '${w.name}' is ${describe(g)}: the slot needs ${describe(w)}`);
  }
  const wanted = new Set(want.bindings.map(key));
  for (const g of got.bindings) {
    if (!wanted.has(key(g)))
      out.push(
        `binding ${g.binding} '${g.name}' (@group(${g.group})) is not part of the slot: the launcher binds nothing there`,
      );
  }
  const gotOverrides = new Map(got.overrides.map((o) => [o.name, o.type]));
  for (const o of want.overrides) {
    const t = gotOverrides.get(o.name);
    if (t === undefined)
      out.push(`override ${o.name}: ${o.type} is missing: the launcher or a fault switch sets it`);
    else if (t !== o.type) out.push(`override ${o.name} is ${t}: the slot sets it as ${o.type}`);
  }
  return out;
}

/**
 * Interface problems of a custom source for a slot (its includes are the shipped ones), in every kernel built
 * from the slot's file (a problem only in the split-K variants says so).
 */
export function checkCustomInterface(slotId: CustomSlotId, source: string, shaders: ShaderSource): string[] {
  const slot = customSlot(slotId);
  const out: string[] = [];
  for (const [n, kernel] of slotKernels(slot).entries()) {
    const want = shippedInterface(kernel, shaders);
    const code = kernelCode(kernel, (f) => (f === slot.kernel.file ? source : shaders(f)));
    let got: KernelInterface;
    try {
      got = reflectInterface(code);
    } catch (e) {
      return [(e as Error).message];
    }
    const where = n === 0 ? '' : ` (in ${kernel.name})`;
    for (const p of interfaceProblems(want, got))
      if (!out.some((o) => o.startsWith(p))) out.push(`${p}${where}`);
  }
  return out;
}
