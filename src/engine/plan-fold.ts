// Folding a split-K reduction into the op after it (issue 21): a split GEMM is two dispatches, the partial GEMM
// into a workspace and the reduction that sums the partials (in split order, through acc()) and runs the
// epilogue (bias, residual, one st()). Where the GEMM's output has one consumer, that consumer can do the
// reduction itself, exactly as the reduction would, write the tap the reduction wrote, and use the value where it
// read it before:
// 1. attention.dense → its consumer in the same layer: the MLP's residual epilogue with the parallel residual
//    (y = ((mlp·W^T + b) + attn_output) + x; its split reduction or its unsplit GEMM epilogue), the residual
//    add + LayerNorm without it. One dispatch less per layer.
// 2. the MLP down-projection (dense_4h_to_h + residual) → the next layer's LayerNorm (layernorm2, or ln1 alone
//    when sequential), which forms the residual row, writes the previous layer's 'out' tap and normalizes it;
//    with the parallel residual attention.dense's reduction moves along (the LayerNorm forms attn_output too
//    and writes its tap). One more dispatch less per layer but the last (final_norm is a reference kernel).
// Every tap keeps its bits (src/engine/plan-fold.test.ts checks them all, bit for bit).
//
// The fold is the plan's choice, not the fused-kernel table's: the table still says what replaces what. The
// folded work stays its kernel's in every report but one: its time. A partial GEMM keeps its op's label
// (`layers.i.attn_out/splitk`, `layers.i.residual_epilogue/splitk`: kinds attn_out, residual_epilogue); the
// reduction's few microseconds run inside the consumer's dispatch and count as the consumer's
// (residual_epilogue, add_layernorm, or `layers.{i+1}.layernorm`, which is layer i + 1's time). The consumer's op
// writes the taps (after its dispatch); with fold 2 that op belongs to the next layer (PlanOp.layer = i + 1).
//
// It applies only where nothing observable can change, and the plan keeps the unfolded ops elsewhere:
// - the caller asks for it (PlanOptions.fold) and names the custom kernel's file: a custom kernel in a slot of
//   either side (linear_bias, linear_residual, add_layernorm, layernorm2) keeps the unfolded ops, since the
//   folded kernels are other files;
// - both kernels of the pair are switched on (bisection switches one off: nothing to fold into);
// - no hooks on the layers and kernels involved (fault constants of any kind, aliasResidual, staleContext);
// - the producing GEMM is split at all (one dispatch has no reduction to fold), and the consumer is in the plan
//   (a layer range that ends at layer i keeps layer i's MLP reduction);
// - the device allows the folded kernel's storage bindings in one shader (the LayerNorm of fold 2 binds 12).
// KV-cache plans fold the same way: the K partition is per (N, K), so a decoded row's bits are the whole
// forward's either way.

import type { KernelDef, OverrideConstants } from '../gpu/pipelines';
import { type GemmLaunch, gemmLaunch, linearBiasKernel, linearResidualKernel } from '../kernels/fused-linear';
import { linearResidualFoldKernels, type PartialsWorkspace } from '../kernels/fused-linear-fold';
import {
  addLayerNormFoldKernel,
  addLayerNormKernel,
  layerNorm2FoldKernel,
  layerNorm2Kernel,
} from '../kernels/fused-norm';
import type { GemmPolicy } from '../kernels/gemm-configs';
import type { FusedKernelId } from './fused-kernels';
import type { PlanHooks } from './plan-types';

/** Per layer of a plan: whether attention.dense's and the MLP's reductions fold; the workspaces of the folds. */
export interface PlanFolds {
  layers: { dense: boolean; out: boolean }[];
  dense: PartialsWorkspace;
  mlp: PartialsWorkspace;
}

/**
 * The folds of layers [from, to) (the same in every replay of the plan's key: path, hooks, custom kernel) and one
 * buffer for the partials they keep until the op that reduces them (the GEMMs between use the shared workspace):
 * attention.dense's from float 0, the MLP down-projection's after them (aligned for a binding offset). One
 * buffer, since the LayerNorm that reduces both binds it once; every layer uses the same regions (each is read
 * before the next layer writes it). Allocated (`alloc`) only when a fold writes; where the two regions would not
 * fit one binding, nothing folds.
 */
export function planFolds(
  o: { fold?: FoldOptions; fused: ReadonlySet<FusedKernelId>; hooks?: PlanHooks; maxBindingBytes: number },
  p: {
    parallel: boolean;
    from: number;
    to: number;
    T: number;
    d: number;
    ff: number;
    limits: { maxStorageBuffersPerShaderStage: number; minStorageBufferOffsetAlignment: number };
    gemm: { policy?: GemmPolicy; workspace?: (floats: number) => GPUBuffer };
    constants: (kernel: FusedKernelId, layer: number) => OverrideConstants;
    alloc: (floats: number) => GPUBuffer;
  },
): PlanFolds {
  const { T, d, ff } = p;
  const max = p.limits.maxStorageBuffersPerShaderStage;
  const layers = Array.from({ length: p.to - p.from }, (_, j) => {
    const i = p.from + j;
    return {
      dense:
        foldsDense(o, p.parallel, i, max) &&
        splits(`layers.${i}.attn_out`, T, d, d, p.gemm, p.constants('gemm', i)),
      out:
        foldsOut(o, i, p.to, max) &&
        splits(`layers.${i}.residual_epilogue`, T, d, ff, p.gemm, p.constants('residual_epilogue', i)),
    };
  });
  const split = (N: number, K: number) =>
    partials(gemmLaunch('fold', T, N, K, { ...p.gemm, constants: p.constants('gemm', p.from) }));
  const region = {
    dense: layers.some((f) => f.dense) ? split(d, d) * T * d : 0,
    mlp: layers.some((f) => f.out) ? split(d, ff) * T * d : 0,
  };
  const align = p.limits.minStorageBufferOffsetAlignment / 4;
  const mlpAt = Math.ceil(region.dense / align) * align;
  if ((mlpAt + region.mlp) * 4 > o.maxBindingBytes)
    for (const f of layers) Object.assign(f, { dense: false, out: false });
  let buffer: GPUBuffer | null = null;
  const at = (r: 'dense' | 'mlp') => (floats: number) => {
    if (floats > region[r])
      throw new Error(`plan: ${floats} floats of ${r} partials exceed their region (${region[r]})`);
    buffer ??= p.alloc(mlpAt + region.mlp);
    return { buffer, offset: r === 'dense' ? 0 : mlpAt };
  };
  return { layers, dense: at('dense'), mlp: at('mlp') };
}

/** Storage buffers a kernel binds: a fold runs only where the device allows that many in one shader. */
function storageBindings(k: KernelDef): number {
  return k.bindings.filter((b) => b.kind !== 'uniform').length;
}

/** PlanOptions.fold: fold split-K reductions into their consumers where nothing observable changes. */
export interface FoldOptions {
  /** The shaders/ file a custom kernel replaces (engine.setCustomKernel), or null: a fold bypasses its files. */
  custom: string | null;
}

/**
 * The fold options of a plan made while the engine's custom kernel is `kernelKey` (`${file}#${hash}`, '' for
 * none: engine.ts's kernelKey, part of every recording's key, so a recording's fold follows its key).
 */
export function foldFor(kernelKey: string): FoldOptions {
  const hash = kernelKey.indexOf('#');
  return { custom: kernelKey === '' ? null : hash < 0 ? kernelKey : kernelKey.slice(0, hash) };
}

/** The files whose work a fold moves into another kernel: a custom kernel in any of them keeps the pair. */
export const FOLD_FILES: readonly string[] = [
  linearBiasKernel.file,
  linearResidualKernel.file,
  addLayerNormKernel.file,
  layerNorm2Kernel.file,
];

/** The fused kernel that consumes attn_output: the residual epilogue (parallel) or the add + LayerNorm. */
export function denseConsumer(parallel: boolean): FusedKernelId {
  return parallel ? 'residual_epilogue' : 'layernorm';
}

/**
 * Whether attention.dense's split-K reduction of `layer` folds into its consumer: every rule above but the
 * split itself (see denseSplits).
 */
export function foldsDense(
  o: { fold?: FoldOptions; fused: ReadonlySet<FusedKernelId>; hooks?: PlanHooks },
  parallel: boolean,
  layer: number,
  maxStorage: number,
): boolean {
  if (!o.fold) return false;
  const kernels = parallel
    ? [linearResidualFoldKernels.gemm, linearResidualFoldKernels.reduce]
    : [addLayerNormFoldKernel];
  if (kernels.some((k) => storageBindings(k) > maxStorage)) return false;
  if (o.fold.custom !== null && FOLD_FILES.includes(o.fold.custom)) return false;
  const consumer = denseConsumer(parallel);
  if (!o.fused.has('gemm') || !o.fused.has(consumer)) return false;
  const h = o.hooks;
  if (h?.aliasResidual?.(layer) || h?.staleContext?.(layer)) return false;
  for (const k of ['gemm', consumer] as const) {
    const c = h?.constants?.(k, layer);
    if (c && Object.keys(c).length > 0) return false;
  }
  return true;
}

/**
 * Whether the MLP down-projection's split-K reduction of `layer` folds into the next layer's LayerNorm: that
 * layer is in the plan (a range that ends at `layer` + 1 keeps the reduction, and the last layer's feeds
 * final_norm, a reference kernel), both kernels are on, and no hooks touch either op.
 */
export function foldsOut(
  o: { fold?: FoldOptions; fused: ReadonlySet<FusedKernelId>; hooks?: PlanHooks },
  layer: number,
  to: number,
  maxStorage: number,
): boolean {
  if (!o.fold || layer + 1 >= to) return false;
  if (storageBindings(layerNorm2FoldKernel) > maxStorage) return false;
  if (o.fold.custom !== null && FOLD_FILES.includes(o.fold.custom)) return false;
  if (!o.fused.has('residual_epilogue') || !o.fused.has('layernorm')) return false;
  const h = o.hooks;
  if (h?.aliasResidual?.(layer) || h?.staleContext?.(layer)) return false;
  for (const [k, l] of [
    ['residual_epilogue', layer],
    ['layernorm', layer + 1],
  ] as const) {
    const c = h?.constants?.(k, l);
    if (c && Object.keys(c).length > 0) return false;
  }
  return true;
}

/** Whether a [T, N] · [N, K]^T linear runs split-K under this policy (and these constants). */
export function splits(
  label: string,
  T: number,
  N: number,
  K: number,
  gemm: { policy?: GemmPolicy; workspace?: (floats: number) => GPUBuffer },
  constants: OverrideConstants,
): boolean {
  return partials(gemmLaunch(label, T, N, K, { ...gemm, constants })) > 1;
}

/** The partial sums a launch leaves for a reduction: its splits, or 1 where it is one dispatch (the GEMV). */
function partials(launch: GemmLaunch): number {
  return launch.gemv ? 1 : launch.split;
}
