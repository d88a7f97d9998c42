// The slots a kernel written in the page can fill: one per WGSL file of a fused kernel. A custom kernel
// replaces that file's text (its includes stay the shipped ones) through the pipeline cache's override, so
// the launcher, the plan and every binding stay as they are; only the WGSL differs.

import type { KernelDef } from '../../gpu/pipelines';
import { flashAttentionKernel } from '../flash-attention';
import type { CustomSlotId, FusedKernelId } from '../fused-ids';
import {
  FUSED_LINEAR_KERNELS,
  linearBiasKernel,
  linearGeluKernel,
  linearResidualKernel,
  qkvRotaryKernel,
} from '../fused-linear';
import { addLayerNormKernel, layerNorm2Kernel } from '../fused-norm';

// The slot names are declared in fused-ids.ts, beside the fused kernels' names.
export type { CustomSlotId };

export interface CustomSlot {
  id: CustomSlotId;
  /** The fused kernel (a RunSpec's `fused` entry) whose ops run this file. */
  fused: FusedKernelId;
  /** The shipped kernel: its file is what a custom source replaces. */
  kernel: KernelDef;
  title: string;
  /** Which models run it: the parallel-residual LayerNorm only runs on Pythia-style models, and so on. */
  note: string;
}

export const CUSTOM_SLOTS: readonly CustomSlot[] = [
  {
    id: 'layernorm2',
    fused: 'layernorm',
    kernel: layerNorm2Kernel,
    title: 'Dual LayerNorm (ln1 and ln2 from one read)',
    note: 'Runs on parallel-residual models (Pythia, the embedded model): both LayerNorms of every layer.',
  },
  {
    id: 'add_layernorm',
    fused: 'layernorm',
    kernel: addLayerNormKernel,
    title: 'Residual add + LayerNorm',
    note: 'Runs on sequential-residual models only (use_parallel_residual: false).',
  },
  {
    id: 'qkv_rotary',
    fused: 'qkv_rotary',
    kernel: qkvRotaryKernel,
    title: 'QKV projection + bias + rotary',
    note: 'Every layer: the GEMM epilogue that splits heads and rotates q and k.',
  },
  {
    id: 'flash_attention',
    fused: 'flash_attention',
    kernel: flashAttentionKernel,
    title: 'Flash attention',
    note: 'Every layer: causal attention with an online softmax.',
  },
  {
    id: 'linear_bias',
    fused: 'gemm',
    kernel: linearBiasKernel,
    title: 'Tiled GEMM + bias (attention.dense, LM head)',
    note: 'Every layer (attention.dense) and the LM head.',
  },
  {
    id: 'linear_gelu',
    fused: 'linear_gelu',
    kernel: linearGeluKernel,
    title: 'Linear + bias + GELU',
    note: 'Every layer: dense_h_to_4h with exact GELU in the epilogue.',
  },
  {
    id: 'linear_residual',
    fused: 'residual_epilogue',
    kernel: linearResidualKernel,
    title: 'Linear + bias + residual epilogue',
    note: 'Every layer: dense_4h_to_h with the residual add in the epilogue.',
  },
];

export function isCustomSlotId(s: string): s is CustomSlotId {
  return CUSTOM_SLOTS.some((k) => k.id === s);
}

/**
 * Every kernel compiled from a slot's file: the slot's own, then the others that include the same file (the
 * GEMM epilogues also run as the split-K partial GEMM and the split-K reduction, on other includes).
 */
export function slotKernels(slot: CustomSlot): KernelDef[] {
  const all = [
    slot.kernel,
    addLayerNormKernel,
    layerNorm2Kernel,
    flashAttentionKernel,
    ...FUSED_LINEAR_KERNELS,
  ];
  return [
    slot.kernel,
    ...all.filter((k) => k.file === slot.kernel.file && k.name !== slot.kernel.name),
  ].filter((k, i, a) => a.findIndex((x) => x.name === k.name) === i);
}

export function customSlot(id: CustomSlotId): CustomSlot {
  const s = CUSTOM_SLOTS.find((k) => k.id === id);
  if (!s) throw new Error(`no custom kernel slot '${id}'`);
  return s;
}
