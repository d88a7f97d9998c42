// The fused kernels as a table: the plan (src/engine/plan.ts) is built from it. Each fused kernel is one entry:
// the reference ops it replaces, as one or more fusions (a fused dispatch group placed where its first replaced
// op would run), the taps it never writes out ("fused away"), and for each fusion the WGSL file it runs — a
// custom-kernel slot (src/kernels/custom/slots.ts: the file, its kernel descriptors, the binding interface read
// from the WGSL, the isolated test recipe) — and its launcher (src/engine/plan-ops.ts, named arguments).
// Op names are the reference plan's and the oracle's (src/kernels/cpu/forward.ts), read off the op registry's
// GPT-NeoX steps: the join key everywhere.
// The table says what replaces what; where a split-K reduction runs (its own dispatch, or folded into the op
// after it) is the plan's choice (plan-fold.ts), invisible in every tap.

// The ids are declared below the engine (src/kernels/fused-ids.ts), so the kernels' slots can name them.
import type { CustomSlotId, FusedKernelId } from '../kernels/fused-ids';
import { NEOX_PARALLEL, NEOX_SEQUENTIAL, planOpsOf } from '../ops/families';
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

/** One fused dispatch group: what it replaces, on which models, and the WGSL file (slot) it runs. */
export interface Fusion {
  /** The launcher in plan-ops.ts (and the op label suffix, e.g. 'layers.3.add_layernorm'). */
  launcher:
    | 'layernorm2'
    | 'add_layernorm'
    | 'qkv_rotary'
    | 'flash_attention'
    | 'dense'
    | 'lm_head'
    | 'linear_gelu'
    | 'residual_epilogue';
  /** The reference ops it replaces; it runs where the first of them would. */
  replaces: readonly PlanOpName[];
  /** Only on models with (true) or without (false) the parallel residual; both when absent. */
  parallelResidual?: boolean;
  /** The WGSL file it runs, as a custom-kernel slot. */
  slot: CustomSlotId;
}

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

function entry(e: Omit<FusedKernelInfo, 'replaces'>): FusedKernelInfo {
  const replaces = [...new Set(e.fusions.flatMap((f) => f.replaces))];
  return { ...e, replaces };
}

export const FUSED_KERNELS: readonly FusedKernelInfo[] = [
  entry({
    id: 'layernorm',
    title: 'Fused LayerNorm',
    fusions: [
      // Parallel residual: both norms read the same x, so one read of the row serves both.
      { launcher: 'layernorm2', replaces: ['ln1', 'ln2'], parallelResidual: true, slot: 'layernorm2' },
      // Sequential: ln1 alone, then ln2 of attn + x together with that residual add.
      { launcher: 'layernorm2', replaces: ['ln1'], parallelResidual: false, slot: 'layernorm2' },
      {
        launcher: 'add_layernorm',
        replaces: ['resid_mid', 'ln2'],
        parallelResidual: false,
        slot: 'add_layernorm',
      },
    ],
    fusedAway: [],
    description:
      'Parallel residual: both LayerNorms of a layer from one read of the residual row. Sequential: the ' +
      'residual add (attn + x) and post_attention_layernorm in one pass, writing both.',
  }),
  entry({
    id: 'qkv_rotary',
    title: 'QKV projection + bias + rotary',
    fusions: [{ launcher: 'qkv_rotary', replaces: ['qkv', 'rotary'], slot: 'qkv_rotary' }],
    fusedAway: ['qkv'],
    description:
      'The fused QKV GEMM with bias, partial rotate-half rotary and the head split in its epilogue.',
  }),
  entry({
    id: 'flash_attention',
    title: 'Flash attention',
    fusions: [{ launcher: 'flash_attention', replaces: ['scores', 'probs', 'ctx'], slot: 'flash_attention' }],
    fusedAway: ['scores', 'probs'],
    description:
      'Causal attention in one pass, tiled over keys with an online softmax; no T×T matrix in memory.',
  }),
  entry({
    id: 'gemm',
    title: 'Tiled GEMM (dense, LM head)',
    fusions: [
      { launcher: 'dense', replaces: ['attn_out'], slot: 'linear_bias' },
      { launcher: 'lm_head', replaces: ['logits'], slot: 'linear_bias' },
    ],
    fusedAway: [],
    description: 'The register-blocked GEMM core for the plain linears: attention.dense and the LM head.',
  }),
  entry({
    id: 'linear_gelu',
    title: 'Linear + bias + GELU',
    fusions: [{ launcher: 'linear_gelu', replaces: ['fc1', 'gelu'], slot: 'linear_gelu' }],
    fusedAway: ['fc1'],
    description: 'dense_h_to_4h with bias and exact GELU in the GEMM epilogue.',
  }),
  entry({
    id: 'residual_epilogue',
    title: 'Residual epilogue',
    fusions: [{ launcher: 'residual_epilogue', replaces: ['mlp_out', 'out'], slot: 'linear_residual' }],
    fusedAway: ['mlp_out'],
    description:
      'dense_4h_to_h with bias and the residual add (x + attn + mlp, or r + mlp) in the GEMM epilogue.',
  }),
];

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
