// The fused kernels of the registry: each is a switch (its id is a RunSpec's `fused` entry, in reports, permalinks
// and runs links) that replaces some of the op kinds of each family with one kernel of its own. Each family's words
// for it and the op kinds it replaces are here; a descriptor's `fused` (ops/descriptors.ts) lists the kernels that
// may replace it, read off these. GPT-NeoX's plan (engine/fused-kernels.ts, plan.ts) is built from its `neox`
// fusions; the Llama fused forward (engine/llama-fused.ts) runs its `llama.kernel` under the same switch; the page
// names a switch by the loaded family's words (ui/kernel-words.ts). Launchers are filled into the ops' `fused` slots
// by the parts that own them (kernels/ops/).

import type { FusedKernelId, OpKind, PlanOp } from './types';

export { FUSED_KERNEL_IDS, type FusedKernelId } from './types';

/**
 * The WGSL files a GPT-NeoX fusion runs, by slot name: each is a custom-kernel slot (src/kernels/custom/slots.ts holds
 * the slot's kernel descriptors, title and note).
 */
export type CustomSlotId =
  | 'layernorm2'
  | 'add_layernorm'
  | 'qkv_rotary'
  | 'flash_attention'
  | 'linear_bias'
  | 'linear_gelu'
  | 'linear_residual';

/** The Llama fused forward's kernels (engine/llama-fused.ts), each run under one switch. */
export type LlamaFusedKernel = 'addRmsNorm' | 'qkvRope' | 'swiglu' | 'flash' | 'gemm';

/** One GPT-NeoX fused dispatch group: what it replaces, on which models, and the WGSL file (slot) it runs. */
export interface Fusion {
  /** The launcher in engine/plan-ops.ts (and the op label suffix, e.g. 'layers.3.add_layernorm'). */
  launcher:
    | 'layernorm2'
    | 'add_layernorm'
    | 'qkv_rotary'
    | 'flash_attention'
    | 'dense'
    | 'lm_head'
    | 'linear_gelu'
    | 'residual_epilogue';
  /** The reference plan ops it replaces; it runs where the first of them would. */
  replaces: readonly PlanOp[];
  /** Only on models with (true) or without (false) the parallel residual; both when absent. */
  parallelResidual?: boolean;
  /** The WGSL file it runs, as a custom-kernel slot. */
  slot: CustomSlotId;
}

/** What the analysis should report when a teaching fault is planted. */
export type FaultExpectation = 'diverges' | 'benign' | 'race' | 'long-prompt' | 'decode';

/**
 * A teaching fault of a fused kernel (run/faults.ts): a switch of its WGSL override constants, planted in the fused
 * path only, off by default.
 */
export interface KernelFault<Id extends string = string> {
  id: Id;
  title: string;
  /** Override constants set in the kernel, or null for a wiring fault (GPT-NeoX's plan hooks). */
  constants: Record<string, number | boolean> | null;
  expect: FaultExpectation;
  description: string;
  /** The field report (../shared/field-reports) the fault comes from. */
  story: string;
}

/** The Llama family's teaching faults, in the order the page lists them; each is one switch's (`llama.faults`). */
export const LLAMA_FAULT_IDS = ['rms_eps_outside', 'swap_gate_up', 'kv_interleaved'] as const;
export type LlamaFaultId = (typeof LLAMA_FAULT_IDS)[number];

/** A family's words for a switch and the op kinds its kernel replaces there (none: the switch changes nothing). */
export interface FusedWords {
  title: string;
  description: string;
  ops: readonly OpKind[];
}

export interface FusedKernelSpec {
  id: FusedKernelId;
  neox: FusedWords & {
    fusions: readonly Fusion[];
    /** Taps of the replaced ops the kernel never writes out. */
    fusedAway: readonly string[];
  };
  llama: FusedWords & {
    kernel: LlamaFusedKernel | null;
    /** The teaching faults its kernel carries, each a switch of the kernel's overrides, on in every layer. */
    faults: readonly KernelFault<LlamaFaultId>[];
  };
}

export const FUSED: readonly FusedKernelSpec[] = [
  {
    id: 'layernorm',
    neox: {
      title: 'Fused LayerNorm',
      description:
        'Parallel residual: both LayerNorms of a layer from one read of the residual row. Sequential: the ' +
        'residual add (attn + x) and post_attention_layernorm in one pass, writing both.',
      ops: ['layernorm', 'residual'],
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
    },
    llama: {
      kernel: 'addRmsNorm',
      title: 'Residual add + RMSNorm',
      description:
        'The residual add and the next RMSNorm (input_layernorm, post_attention_layernorm, the final norm) in one ' +
        'pass, writing both.',
      ops: ['rmsnorm', 'residual', 'final_norm'],
      faults: [
        {
          id: 'rms_eps_outside',
          title: 'RMSNorm eps outside the root (Llama family)',
          // The eps scaled up as a kernel with a wrong constant would have it: HF's 1e-6 outside the root moves y by
          // about eps / rms, under the floor (the override is the kernel's own, FAULT_EPS_SCALE).
          constants: { FAULT_EPS_OUTSIDE: true, FAULT_EPS_SCALE: 1e4 },
          expect: 'diverges',
          description:
            'The fused residual add + RMSNorm divides by sqrt(mean(x²)) + eps instead of ' +
            'sqrt(mean(x²) + eps), with an eps too large: every row is scaled a little wrong, most where its rms ' +
            'is small.',
          story:
            'A fused add that passed every isolated test, then diverged from layer 1 in the model: the norm ' +
            'fused with the add is where such a constant hides.',
        },
      ],
    },
  },
  {
    id: 'qkv_rotary',
    neox: {
      title: 'QKV projection + bias + rotary',
      description:
        'The fused QKV GEMM with bias, partial rotate-half rotary and the head split in its epilogue.',
      ops: ['qkv', 'rotary'],
      fusions: [{ launcher: 'qkv_rotary', replaces: ['qkv', 'rotary'], slot: 'qkv_rotary' }],
      fusedAway: ['qkv'],
    },
    llama: {
      kernel: 'qkvRope',
      title: 'Q/K/V projection + rotary',
      description:
        'q_proj, k_proj and v_proj in one GEMM (with their biases where the config has them) and the rotate-half ' +
        "rotary embedding, with the config's theta and scaling, in its epilogue.",
      ops: ['q_proj', 'k_proj', 'v_proj', 'rotary'],
      faults: [],
    },
  },
  {
    id: 'flash_attention',
    neox: {
      title: 'Flash attention',
      description:
        'Causal attention in one pass, tiled over keys with an online softmax; no T×T matrix in memory.',
      ops: ['attention'],
      fusions: [
        { launcher: 'flash_attention', replaces: ['scores', 'probs', 'ctx'], slot: 'flash_attention' },
      ],
      fusedAway: ['scores', 'probs'],
    },
    llama: {
      kernel: 'flash',
      title: 'Flash attention (grouped-query)',
      description:
        'Causal attention in one pass over key tiles with an online softmax; each query head reads its KV head ' +
        '(GQA, MQA), within the sliding window where the config sets one.',
      ops: ['attention'],
      faults: [
        {
          id: 'kv_interleaved',
          title: 'KV heads interleaved in grouped-query attention (Llama family)',
          constants: { FAULT_KV_INTERLEAVED: true },
          expect: 'diverges',
          description:
            'Flash attention gives query head h the KV head h mod kvHeads instead of h / group (HF repeat_kv): ' +
            'with one KV head (MQA) or none shared (MHA) every mapping is right and nothing changes.',
          story: 'FlashAttention builds that differ: the layout of the heads is a choice each build makes.',
        },
      ],
    },
  },
  {
    id: 'gemm',
    neox: {
      title: 'Tiled GEMM (dense, LM head)',
      description: 'The register-blocked GEMM core for the plain linears: attention.dense and the LM head.',
      ops: ['out_proj', 'lm_head'],
      fusions: [
        { launcher: 'dense', replaces: ['attn_out'], slot: 'linear_bias' },
        { launcher: 'lm_head', replaces: ['logits'], slot: 'linear_bias' },
      ],
      fusedAway: [],
    },
    llama: {
      kernel: 'gemm',
      title: 'Tiled GEMM (o_proj, down_proj, LM head)',
      description:
        'The register-blocked GEMM core for the other projections: o_proj, down_proj and the LM head (and q/k/v, ' +
        'gate and up where their own fused kernels are off).',
      ops: ['out_proj', 'mlp_down', 'lm_head'],
      faults: [],
    },
  },
  {
    id: 'linear_gelu',
    neox: {
      title: 'Linear + bias + GELU',
      description: 'dense_h_to_4h with bias and exact GELU in the GEMM epilogue.',
      ops: ['mlp_up', 'gelu'],
      fusions: [{ launcher: 'linear_gelu', replaces: ['fc1', 'gelu'], slot: 'linear_gelu' }],
      fusedAway: ['fc1'],
    },
    llama: {
      kernel: 'swiglu',
      title: 'Gate/up GEMM + SwiGLU',
      description: 'gate_proj and up_proj in one GEMM, silu(gate) · up in its epilogue.',
      ops: ['gate_up', 'swiglu'],
      faults: [
        {
          id: 'swap_gate_up',
          title: 'Gate and up swapped in the SwiGLU epilogue (Llama family)',
          constants: { FAULT_SWAP_GATE_UP: true },
          expect: 'diverges',
          description:
            'The gate/up GEMM with the SwiGLU epilogue takes silu of the up projection times the gate: the two ' +
            'halves of the concatenated weight read the wrong way round.',
          story: 'A fused Linear+ReLU rebuilt as the wrong module: the shapes fit, the numbers do not.',
        },
      ],
    },
  },
  {
    id: 'residual_epilogue',
    neox: {
      title: 'Residual epilogue',
      description:
        'dense_4h_to_h with bias and the residual add (x + attn + mlp, or r + mlp) in the GEMM epilogue.',
      ops: ['mlp_down', 'residual'],
      fusions: [{ launcher: 'residual_epilogue', replaces: ['mlp_out', 'out'], slot: 'linear_residual' }],
      fusedAway: ['mlp_out'],
    },
    llama: {
      kernel: null,
      title: 'Residual epilogue (none in this family)',
      description:
        "GPT-NeoX's MLP output with the residual add; this family's residual adds are in the add + RMSNorm " +
        'kernel: switching it changes nothing.',
      ops: [],
      faults: [],
    },
  },
];

/** A switch's spec by id (throws on an id no kernel has). */
export function fusedSpec(id: string): FusedKernelSpec {
  const k = FUSED.find((x) => x.id === id);
  if (!k) throw new Error(`op registry: no fused kernel '${id}'`);
  return k;
}

/** The fused kernels that may replace op kind `op` in a family: the registry's `fused` of its descriptor. */
export function fusedOf(op: OpKind, family: 'gpt_neox' | 'llama'): FusedKernelId[] {
  return FUSED.filter((k) => (family === 'llama' ? k.llama : k.neox).ops.includes(op)).map((k) => k.id);
}
