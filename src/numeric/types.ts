// The data types every part shares, pure data with no code: the parsed config, the storage dtypes, a CPU tensor,
// the weights in HF module order and the hidden-state dump. They sit in the numeric leaf so that kernels and
// model both read them without importing each other. The Llama family's config and weights are its own file
// (llama-types.ts), the tensor they share another (tensor-types.ts); both are re-exported here.

export type { LlamaConfig, LlamaFlavour, LlamaLayerWeights, LlamaWeights, RopeScaling } from './llama-types';

import type { LlamaConfig } from './llama-types';
import type { LinearWeights, Tensor } from './tensor-types';

export type { LinearWeights, Tensor } from './tensor-types';

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

/** Any model config the explorer reads: discriminate on `family` ('llama', else GPT-NeoX). */
export type ModelConfig = NeoXConfig | LlamaConfig;

/** Storage dtypes of safetensors we read. */
export type DType = 'F32' | 'F16' | 'BF16';

export interface NormWeights {
  weight: Tensor; // [d]
  bias: Tensor; // [d]
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
