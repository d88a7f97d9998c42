// One descriptor per op kind (docs/ARCHITECTURE.md, "The op registry"): its entry in ops/kinds.ts (its name in words,
// whether it is a matrix product, the weights it reads; a new op kind is one entry there), the forms it must have
// and the fused kernels that may replace it (ops/fused.ts). Which slots, module names and inputs a family uses for
// it are in that family's steps (ops/families.ts).

import { fusedOf } from './fused';
import { OP_ENTRIES, OP_KINDS, type OpKind } from './kinds';
import type { FormKind, OpDescriptor } from './types';

export { OP_KINDS, type OpKind } from './kinds';

/**
 * Every op is computed three ways at least: exactly on the CPU (fp64), by the WGSL reference path, in double-float
 * on the GPU; fused kernels that replace it and the causes (variants of its exact form) come on top.
 */
const ALL: readonly FormKind[] = ['fp64', 'wgsl', 'df'];

function descriptor(kind: OpKind): OpDescriptor {
  const fused = { gpt_neox: fusedOf(kind, 'gpt_neox'), llama: fusedOf(kind, 'llama') };
  return { kind, ...OP_ENTRIES[kind], needs: ALL, fused };
}

export const OPS: Readonly<Record<OpKind, OpDescriptor>> = Object.fromEntries(
  OP_KINDS.map((kind) => [kind, descriptor(kind)]),
) as Record<OpKind, OpDescriptor>;
