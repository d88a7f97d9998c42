// The data types every part shares, pure data with no code: the parsed config, the storage dtypes, a CPU tensor,
// the weights in HF module order and the hidden-state dump. They sit in the numeric leaf so that kernels and
// model both read them without importing each other.

/** A GPT-NeoX config after parsing and validation (src/model/config.ts). */
export interface NeoXConfig {
  /** The family tag of the ModelConfig union; absent in configs built before there were two families. */
  family?: 'gpt_neox';
  vocabSize: number; // V
  hiddenSize: number; // d
  numLayers: number; // L
  numHeads: number; // H
  headDim: number; // d / H
  intermediateSize: number; // ff
  /** rotary_ndims = floor(head_dim * rotary_pct): the first rotaryNdims dims of q and k are rotated. */
  rotaryNdims: number;
  rotaryBase: number;
  layerNormEps: number;
  useParallelResidual: boolean;
  maxPositionEmbeddings: number;
  /** HF `attention_bias` (default true): the QKV and dense projections carry biases. */
  attentionBias: boolean;
  /** HF `tie_word_embeddings`: the LM head reuses the input embedding. */
  tieWordEmbeddings: boolean;
}

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

/** Any model config the explorer reads: discriminate on `family` ('llama', else GPT-NeoX). */
export type ModelConfig = NeoXConfig | LlamaConfig;

/** Storage dtypes of safetensors we read. */
export type DType = 'F32' | 'F16' | 'BF16';

/** A dense row-major fp32 tensor (CPU side). */
export interface Tensor {
  shape: number[];
  data: Float32Array;
}

export interface NormWeights {
  weight: Tensor; // [d]
  bias: Tensor; // [d]
}

export interface LinearWeights {
  weight: Tensor; // [out, in] (PyTorch nn.Linear layout)
  bias: Tensor | null; // [out]
}

/** One GPTNeoXLayer, named like HF's module tree. */
export interface LayerWeights {
  inputLayernorm: NormWeights; // input_layernorm
  postAttentionLayernorm: NormWeights; // post_attention_layernorm
  /** attention.query_key_value: weight [3d, d], rows laid out per head as [H, 3, headDim]. */
  qkv: LinearWeights;
  dense: LinearWeights; // attention.dense: [d, d]
  fc1: LinearWeights; // mlp.dense_h_to_4h: [ff, d]
  fc2: LinearWeights; // mlp.dense_4h_to_h: [d, ff]
}

export interface ModelWeights {
  embedIn: Tensor; // gpt_neox.embed_in.weight [V, d]
  layers: LayerWeights[];
  finalLayerNorm: NormWeights; // gpt_neox.final_layer_norm
  lmHead: Tensor; // embed_out.weight or lm_head.weight [V, d] (embed_in when tied)
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

/**
 * The hidden-state dump (contract, DESIGN.md): flat row-major arrays.
 * embeddings [T][d], layers [L][T][d] (residual after each layer, before the final LayerNorm),
 * finalNorm [T][d], logits [T][V].
 */
export interface HiddenDump<A extends Float32Array | Float64Array = Float32Array> {
  T: number;
  d: number;
  V: number;
  embeddings: A;
  layers: A[];
  finalNorm: A;
  logits: A;
}
