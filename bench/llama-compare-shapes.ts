// The Llama-family shapes the Llama benches run (bench/llama-compare.ts, llama-compare-record.ts): HF config.json
// values, weights seeded by the bench.

/** HF config.json values of the shapes (HuggingFaceTB/SmolLM2-135M, Qwen/Qwen2.5-0.5B); weights seeded. */
export const CONFIGS: Record<string, Record<string, unknown>> = {
  tiny: {
    model_type: 'qwen2',
    vocab_size: 997,
    hidden_size: 96,
    num_hidden_layers: 2,
    num_attention_heads: 6,
    num_key_value_heads: 2,
    intermediate_size: 136,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    tie_word_embeddings: true,
    hidden_act: 'silu',
  },
  // The Qwen2.5-0.5B shape's layers, heads and dispatches at small widths: the compare's CPU side (recording, waits)
  // measured on a CPU adapter, where the 0.5B shape's GPU work would take minutes.
  'qwen-thin': {
    model_type: 'qwen2',
    vocab_size: 1000,
    hidden_size: 112,
    num_hidden_layers: 24,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    head_dim: 8,
    intermediate_size: 200,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    tie_word_embeddings: true,
    hidden_act: 'silu',
  },
  'smollm2-135m': {
    model_type: 'llama',
    vocab_size: 49152,
    hidden_size: 576,
    num_hidden_layers: 30,
    num_attention_heads: 9,
    num_key_value_heads: 3,
    intermediate_size: 1536,
    rms_norm_eps: 1e-5,
    rope_theta: 100000,
    max_position_embeddings: 8192,
    tie_word_embeddings: true,
    hidden_act: 'silu',
  },
  'qwen2.5-0.5b': {
    model_type: 'qwen2',
    vocab_size: 151936,
    hidden_size: 896,
    num_hidden_layers: 24,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    intermediate_size: 4864,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    max_position_embeddings: 32768,
    tie_word_embeddings: true,
    use_sliding_window: false,
    hidden_act: 'silu',
  },
};
