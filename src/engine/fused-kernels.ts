// The fused kernels as a table: the plan (src/engine/plan.ts) is built from it. Each fused kernel is one entry of
// the op registry (src/ops/fused.ts, GPT-NeoX's side of each switch): the reference ops it replaces, as one or more
// fusions (a fused dispatch group placed where its first replaced op would run), the taps it never writes out
// ("fused away"), and for each fusion the WGSL file it runs — a custom-kernel slot (src/kernels/custom/slots.ts: the
// file, its kernel descriptors, the binding interface read from the WGSL, the isolated test recipe) — and its
// launcher (src/engine/plan-ops.ts, named arguments). Op names are the reference plan's and the oracle's
// (src/kernels/cpu/forward.ts), read off the op registry's GPT-NeoX steps: the join key everywhere.
// The table says what replaces what; where a split-K reduction runs (its own dispatch, or folded into the op
// after it) is the plan's choice (plan-fold.ts), invisible in every tap.

import type { CustomSlotId, FusedKernelId } from '../kernels/fused-ids';
import { NEOX_PARALLEL, NEOX_SEQUENTIAL, planOpsOf } from '../ops/families';
import { FUSED, type Fusion } from '../ops/fused';
import type { PlanOp } from '../ops/types';

export type { CustomSlotId, FusedKernelId };

/**
 * The reference ops of one layer in the order they run (HF GPTNeoXLayer; forward.ts taps the same names), then
 * the ops after the last layer: the op registry's GPT-NeoX steps under their plan names (src/ops/families.ts).
 * 'rotary' writes the taps q, k, v; 'resid_mid' exists only without the parallel residual (attn + x before the MLP).
 */
export const LAYER_OPS = planOpsOf(NEOX_SEQUENTIAL) as readonly LayerOp[];
export const HEAD_OPS = [NEOX_SEQUENTIAL.finalNorm.slot, NEOX_SEQUENTIAL.lmHead.slot] as readonly HeadOp[];
export type HeadOp = Extract<PlanOp, 'final_norm' | 'logits'>;
export type LayerOp = Exclude<PlanOp, HeadOp>;
export type PlanOpName = PlanOp;

export type { Fusion };

export interface FusedKernelInfo {
  id: FusedKernelId;
  title: string;
  fusions: readonly Fusion[];
  /** Reference ops (tap names without the 'layers.i.' prefix) this kernel replaces: its fusions' together. */
  replaces: readonly string[];
  /** Taps of those ops the fused kernel never writes out. */
  fusedAway: readonly string[];
  description: string;
}

/** The op registry's fused kernels (ops/fused.ts) as GPT-NeoX's plan reads them: its words and its fusions. */
export const FUSED_KERNELS: readonly FusedKernelInfo[] = FUSED.map(({ id, neox }) => ({
  id,
  title: neox.title,
  fusions: neox.fusions,
  replaces: [...new Set(neox.fusions.flatMap((f) => f.replaces))],
  fusedAway: neox.fusedAway,
  description: neox.description,
}));

export const ALL_FUSED: ReadonlySet<FusedKernelId> = new Set(FUSED_KERNELS.map((k) => k.id));

export function isFusedKernelId(s: string): s is FusedKernelId {
  return FUSED_KERNELS.some((k) => k.id === s);
}

/** The reference ops a model has (resid_mid only without the parallel residual): its registry layer's. */
export function layerOpsOf(parallelResidual: boolean): readonly LayerOp[] {
  return parallelResidual ? (planOpsOf(NEOX_PARALLEL) as LayerOp[]) : LAYER_OPS;
}

/** The fusions of the kernels switched on that apply to this model, with the kernel each belongs to. */
export function activeFusions(
  fused: ReadonlySet<FusedKernelId>,
  parallelResidual: boolean,
): { kernel: FusedKernelId; fusion: Fusion }[] {
  return FUSED_KERNELS.filter((k) => fused.has(k.id)).flatMap((k) =>
    k.fusions
      .filter((f) => f.parallelResidual === undefined || f.parallelResidual === parallelResidual)
      .map((fusion) => ({ kernel: k.id, fusion })),
  );
}
