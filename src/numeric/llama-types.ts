// The Llama family's types (docs/FAMILIES.md): its config after parsing and its weights, named like HF's module
// tree. numeric/types.ts re-exports them beside GPT-NeoX's, so the rest of the code imports either family's from there.

import type { LinearWeights, Tensor } from './tensor-types';

/** The Llama family's HF model types (docs/FAMILIES.md): one forward, a few switches. */
export type LlamaFlavour = 'llama' | 'qwen2' | 'qwen3' | 'mistral';

/**
 * RoPE frequency scaling (HF `rope_parameters` / `rope_scaling`, docs/FAMILIES.md). `default`: inv_freq as is;
 * `linear`: inv_freq / factor; `llama3`: wavelength-dependent (long wavelengths / factor, short ones kept, a smooth
 * blend between).
 */
export type RopeScaling =
  | { type: 'default' }
  | { type: 'linear'; factor: number }
  | {
      type: 'llama3';
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositionEmbeddings: number;
    };

/** A Llama-family config (LlamaForCausalLM, Qwen2/Qwen3/MistralForCausalLM) after parsing (src/model/config.ts). */
export interface LlamaConfig {
  family: 'llama';
  flavour: LlamaFlavour;
  vocabSize: number; // V
  hiddenSize: number; // d
  numLayers: number; // L
  numHeads: number; // H (query heads)
  /** KV heads (H for MHA, 1 for MQA); KV head j serves query heads j*g … j*g+g-1, g = H / numKvHeads. */
  numKvHeads: number;
  /** Per-head width; HF's explicit `head_dim` or d / H. H * headDim need not equal d (Qwen3). */
  headDim: number;
  intermediateSize: number; // ff
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling;
  /** Rotated dims of each head (headDim * partial_rotary_factor, even; rotate-half over these). */
  rotaryDim: number;
  /** q_proj, k_proj and v_proj carry biases (Llama/Mistral `attention_bias`; Qwen2 always). */
  attentionBias: boolean;
  /** o_proj carries a bias (Llama `attention_bias`; never in Qwen2/Qwen3/Mistral). */
  oProjBias: boolean;
  /** gate/up/down_proj carry biases (Llama `mlp_bias`). */
  mlpBias: boolean;
  /** Qwen3: per-head RMSNorm of q and k (weights [headDim]) before the rotary. */
  qkNorm: boolean;
  /** Per layer: the sliding window (a query at i sees keys j with i - j < window), or null for full causal. */
  slidingWindow: (number | null)[];
  tieWordEmbeddings: boolean;
  maxPositionEmbeddings: number;
}

/** One Llama-family decoder layer, named like HF's module tree (model.layers.N.…). */
export interface LlamaLayerWeights {
  inputLayernorm: Tensor; // input_layernorm.weight [d]
  q: LinearWeights; // self_attn.q_proj [H*hd, d]
  k: LinearWeights; // self_attn.k_proj [KV*hd, d]
  v: LinearWeights; // self_attn.v_proj [KV*hd, d]
  o: LinearWeights; // self_attn.o_proj [d, H*hd]
  /** self_attn.q_norm / k_norm weights [hd] (Qwen3), else null. */
  qNorm: Tensor | null;
  kNorm: Tensor | null;
  postAttentionLayernorm: Tensor; // post_attention_layernorm.weight [d]
  gate: LinearWeights; // mlp.gate_proj [ff, d]
  up: LinearWeights; // mlp.up_proj [ff, d]
  down: LinearWeights; // mlp.down_proj [d, ff]
}

export interface LlamaWeights {
  embedTokens: Tensor; // model.embed_tokens.weight [V, d]
  layers: LlamaLayerWeights[];
  norm: Tensor; // model.norm.weight [d]
  lmHead: Tensor; // lm_head.weight [V, d] (embed_tokens when tied)
}
