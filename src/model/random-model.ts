// Seeded random GPT-NeoX models written as HF-format files (config.json text + safetensors bytes), for tests,
// the CLI test and benchmarks. Init makes every op matter: weights ~ N(0, 1/fan_in), biases and LayerNorm
// parameters perturbed, embeddings ~ N(0, 1).
import { mulberry32, randn } from '../numeric/random';
import type { DType } from '../numeric/types';
import { type TensorToWrite, writeSafetensors } from './safetensors-write';

export interface RandomModelSpec {
  vocab: number;
  d: number;
  layers: number;
  heads: number;
  ff: number;
  rotaryPct: number;
  rotaryBase?: number;
  eps?: number;
  parallel: boolean;
  /** 'classic' writes rotary_pct / rotary_emb_base; 'rope_parameters' the transformers 5.x style. */
  keys?: 'classic' | 'rope_parameters';
  dtype?: DType;
  maxPos?: number;
  /** Name of the LM head tensor ('embed_out.weight' in Pythia checkpoints). */
  head?: 'embed_out.weight' | 'lm_head.weight';
}

export function randomConfigJson(s: RandomModelSpec): Record<string, unknown> {
  const base: Record<string, unknown> = {
    architectures: ['GPTNeoXForCausalLM'],
    model_type: 'gpt_neox',
    vocab_size: s.vocab,
    hidden_size: s.d,
    num_hidden_layers: s.layers,
    num_attention_heads: s.heads,
    intermediate_size: s.ff,
    hidden_act: 'gelu',
    layer_norm_eps: s.eps ?? 1e-5,
    use_parallel_residual: s.parallel,
    max_position_embeddings: s.maxPos ?? 2048,
    tie_word_embeddings: false,
  };
  if ((s.keys ?? 'classic') === 'classic') {
    base.rotary_pct = s.rotaryPct;
    base.rotary_emb_base = s.rotaryBase ?? 10000;
  } else {
    base.rope_parameters = {
      rope_type: 'default',
      rope_theta: s.rotaryBase ?? 10000,
      partial_rotary_factor: s.rotaryPct,
    };
  }
  return base;
}

/** The tensors of a random model, HF names, fp32 data (rounded on write when dtype is F16/BF16). */
export function randomTensors(s: RandomModelSpec, seed: number): TensorToWrite[] {
  const rng = mulberry32(seed);
  const dtype = s.dtype ?? 'F32';
  const out: TensorToWrite[] = [];
  const t = (name: string, shape: number[], data: Float32Array) => out.push({ name, dtype, shape, data });
  const lin = (name: string, n: number, k: number) => {
    t(`${name}.weight`, [n, k], randn(rng, n * k, 1 / Math.sqrt(k)));
    t(`${name}.bias`, [n], randn(rng, n, 0.1));
  };
  const norm = (name: string) => {
    t(
      `${name}.weight`,
      [s.d],
      randn(rng, s.d, 0.1).map((v) => 1 + v),
    );
    t(`${name}.bias`, [s.d], randn(rng, s.d, 0.1));
  };
  t('gpt_neox.embed_in.weight', [s.vocab, s.d], randn(rng, s.vocab * s.d));
  for (let i = 0; i < s.layers; i++) {
    const p = `gpt_neox.layers.${i}`;
    norm(`${p}.input_layernorm`);
    norm(`${p}.post_attention_layernorm`);
    lin(`${p}.attention.query_key_value`, 3 * s.d, s.d);
    lin(`${p}.attention.dense`, s.d, s.d);
    lin(`${p}.mlp.dense_h_to_4h`, s.ff, s.d);
    lin(`${p}.mlp.dense_4h_to_h`, s.d, s.ff);
  }
  norm('gpt_neox.final_layer_norm');
  t(s.head ?? 'embed_out.weight', [s.vocab, s.d], randn(rng, s.vocab * s.d, 1 / Math.sqrt(s.d)));
  return out;
}

export function randomModelFiles(s: RandomModelSpec, seed: number): { config: string; weights: Uint8Array } {
  return {
    config: JSON.stringify(randomConfigJson(s), null, 2),
    weights: writeSafetensors(randomTensors(s, seed), { format: 'pt' }),
  };
}
