// What each fused-kernel switch is called and does, in the loaded model's family. The switches, links and reports
// keep GPT-NeoX's ids (engine/fused-kernels.ts FUSED_KERNELS); a Llama-family model runs its own kernels under
// them (engine/family-llama.ts LLAMA_KERNEL_OF), so the page names those: a Llama model's panel never says
// "LayerNorm" or "GELU" of a kernel that computes RMSNorm or SwiGLU.
import { FUSED_KERNELS } from '../state/kernel-catalog';

export type Family = 'gpt_neox' | 'llama';

export interface KernelWords {
  title: string;
  description: string;
}

/** The Llama family's kernel behind each of GPT-NeoX's switch ids. */
const LLAMA_WORDS: Record<string, KernelWords> = {
  layernorm: {
    title: 'Residual add + RMSNorm',
    description:
      'The residual add and the next RMSNorm (input_layernorm, post_attention_layernorm, the final norm) in one ' +
      'pass, writing both.',
  },
  qkv_rotary: {
    title: 'Q/K/V projection + rotary',
    description:
      'q_proj, k_proj and v_proj in one GEMM (with their biases where the config has them) and the rotate-half ' +
      "rotary embedding, with the config's theta and scaling, in its epilogue.",
  },
  flash_attention: {
    title: 'Flash attention (grouped-query)',
    description:
      'Causal attention in one pass over key tiles with an online softmax; each query head reads its KV head ' +
      '(GQA, MQA), within the sliding window where the config sets one.',
  },
  gemm: {
    title: 'Tiled GEMM (o_proj, down_proj, LM head)',
    description:
      'The register-blocked GEMM core for the other projections: o_proj, down_proj and the LM head (and q/k/v, ' +
      'gate and up where their own fused kernels are off).',
  },
  linear_gelu: {
    title: 'Gate/up GEMM + SwiGLU',
    description: 'gate_proj and up_proj in one GEMM, silu(gate) · up in its epilogue.',
  },
  residual_epilogue: {
    title: 'Residual epilogue (none in this family)',
    description:
      "GPT-NeoX's MLP output with the residual add; this family's residual adds are in the add + RMSNorm " +
      'kernel: switching it changes nothing.',
  },
};

/** The switch's title and description for a model of `family` (absent: GPT-NeoX, as older reports are). */
export function kernelWords(id: string, family?: Family | null): KernelWords {
  if (family === 'llama' && LLAMA_WORDS[id]) return LLAMA_WORDS[id];
  const k = FUSED_KERNELS.find((x) => x.id === id);
  return k ? { title: k.title, description: k.description } : { title: id, description: '' };
}

/**
 * The fused kernel (by its switch id) that writes each of a Llama-family layer's slots on the fused path: the
 * add + RMSNorm the norms and both residual adds (the layer's output with the next layer's input norm), the q/k/v
 * + rotary GEMM the projections and their rotation, the flash attention the attention core, the tiled GEMM
 * o_proj and down_proj, the gate/up GEMM the gate, up and SwiGLU. Slots not named (Qwen3's q/k norms, a plain
 * RMSNorm) are left unbracketed.
 */
const LLAMA_SLOT_KERNEL: Record<string, string> = {
  ln1: 'layernorm',
  ln2_in: 'layernorm',
  ln2: 'layernorm',
  q: 'qkv_rotary',
  k: 'qkv_rotary',
  v: 'qkv_rotary',
  q_rot: 'qkv_rotary',
  k_rot: 'qkv_rotary',
  ctx: 'flash_attention',
  attn_out: 'gemm',
  gate: 'linear_gelu',
  up: 'linear_gelu',
  swiglu: 'linear_gelu',
  mlp_out: 'gemm',
  out: 'layernorm',
};

/** The switched-on fused kernel that writes a Llama-family layer's slot (its id and words), or null. */
export function llamaKernelOfSlot(
  slot: string,
  fusedOn: readonly string[],
): { id: string; title: string } | null {
  const id = LLAMA_SLOT_KERNEL[slot];
  return id && fusedOn.includes(id) ? { id, title: kernelWords(id, 'llama').title } : null;
}
