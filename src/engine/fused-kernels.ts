// The fused kernels a plan can switch on, one at a time or all together, each declaring which reference ops
// it replaces (per layer) and which of their taps it never writes out ("fused away").

export type FusedKernelId =
  | 'layernorm'
  | 'qkv_rotary'
  | 'flash_attention'
  | 'gemm'
  | 'linear_gelu'
  | 'residual_epilogue';

export interface FusedKernelInfo {
  id: FusedKernelId;
  title: string;
  /** Reference ops (tap names without the 'layers.i.' prefix) this kernel replaces. */
  replaces: readonly string[];
  /** Taps of those ops the fused kernel never writes out. */
  fusedAway: readonly string[];
  description: string;
}

export const FUSED_KERNELS: readonly FusedKernelInfo[] = [
  {
    id: 'layernorm',
    title: 'Fused LayerNorm',
    replaces: ['ln1', 'ln2', 'resid_mid'],
    fusedAway: [],
    description:
      'Parallel residual: both LayerNorms of a layer from one read of the residual row. Sequential: the ' +
      'residual add (attn + x) and post_attention_layernorm in one pass, writing both.',
  },
  {
    id: 'qkv_rotary',
    title: 'QKV projection + bias + rotary',
    replaces: ['qkv', 'rotary'],
    fusedAway: ['qkv'],
    description:
      'The fused QKV GEMM with bias, partial rotate-half rotary and the head split in its epilogue.',
  },
  {
    id: 'flash_attention',
    title: 'Flash attention',
    replaces: ['scores', 'probs', 'ctx'],
    fusedAway: ['scores', 'probs'],
    description:
      'Causal attention in one pass, tiled over keys with an online softmax; no T×T matrix in memory.',
  },
  {
    id: 'gemm',
    title: 'Tiled GEMM (dense, LM head)',
    replaces: ['attn_out', 'logits'],
    fusedAway: [],
    description: 'The register-blocked GEMM core for the plain linears: attention.dense and the LM head.',
  },
  {
    id: 'linear_gelu',
    title: 'Linear + bias + GELU',
    replaces: ['fc1', 'gelu'],
    fusedAway: ['fc1'],
    description: 'dense_h_to_4h with bias and exact GELU in the GEMM epilogue.',
  },
  {
    id: 'residual_epilogue',
    title: 'Residual epilogue',
    replaces: ['mlp_out', 'out'],
    fusedAway: ['mlp_out'],
    description:
      'dense_4h_to_h with bias and the residual add (x + attn + mlp, or r + mlp) in the GEMM epilogue.',
  },
];

export const ALL_FUSED: ReadonlySet<FusedKernelId> = new Set(FUSED_KERNELS.map((k) => k.id));

export function isFusedKernelId(s: string): s is FusedKernelId {
  return FUSED_KERNELS.some((k) => k.id === s);
}
