// Over 400 lines: the real config.json of five models (SmolLM2, Llama 3.2, Qwen2.5, Qwen3, Mistral) and one table
// of refusals beside the properties they test; split, the fixtures would be copied or scattered.
import { describe, expect, it } from 'vitest';
import type { LlamaConfig, ModelConfig } from '../numeric/types';
import { ModelLoadError } from './errors';
import { parseModelConfig, parseModelConfigText } from './model-config';

function loadError(fn: () => unknown): ModelLoadError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ModelLoadError) return e;
    throw e;
  }
  throw new Error('expected a ModelLoadError, nothing was thrown');
}

function llama(json: unknown): LlamaConfig {
  const c: ModelConfig = parseModelConfig(json);
  if (c.family !== 'llama') throw new Error(`expected the Llama family, got ${c.family}`);
  return c;
}

// HuggingFaceTB/SmolLM2-135M (transformers 4.42, classic keys; nanotron's rope_interleaved, which HF ignores).
const SMOLLM2_135M = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 0,
  eos_token_id: 0,
  hidden_act: 'silu',
  hidden_size: 576,
  initializer_range: 0.041666666666666664,
  intermediate_size: 1536,
  is_llama_config: true,
  max_position_embeddings: 8192,
  mlp_bias: false,
  model_type: 'llama',
  num_attention_heads: 9,
  num_hidden_layers: 30,
  num_key_value_heads: 3,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_interleaved: false,
  rope_scaling: null,
  rope_theta: 100000,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.42.3',
  use_cache: true,
  vocab_size: 49152,
};

// meta-llama/Llama-3.2-1B (classic keys, llama3 rope_scaling, explicit head_dim).
const LLAMA32_1B = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 128000,
  eos_token_id: 128001,
  head_dim: 64,
  hidden_act: 'silu',
  hidden_size: 2048,
  initializer_range: 0.02,
  intermediate_size: 8192,
  max_position_embeddings: 131072,
  mlp_bias: false,
  model_type: 'llama',
  num_attention_heads: 32,
  num_hidden_layers: 16,
  num_key_value_heads: 8,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_scaling: {
    factor: 32.0,
    high_freq_factor: 4.0,
    low_freq_factor: 1.0,
    original_max_position_embeddings: 8192,
    rope_type: 'llama3',
  },
  rope_theta: 500000.0,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.45.0.dev0',
  use_cache: true,
  vocab_size: 128256,
};

// The same model as transformers 5.x saves it: rope_parameters holds theta and the scaling.
const LLAMA32_1B_V5 = (() => {
  const { rope_scaling: _s, rope_theta: _t, torch_dtype: _d, ...rest } = LLAMA32_1B;
  return {
    ...rest,
    dtype: 'bfloat16',
    transformers_version: '5.0.0',
    rope_parameters: { ...LLAMA32_1B.rope_scaling, rope_theta: 500000.0 },
  };
})();

// Qwen/Qwen2.5-0.5B (q/k/v biases by construction, tied, sliding window off).
const QWEN25_05B = {
  architectures: ['Qwen2ForCausalLM'],
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151643,
  hidden_act: 'silu',
  hidden_size: 896,
  initializer_range: 0.02,
  intermediate_size: 4864,
  max_position_embeddings: 32768,
  max_window_layers: 24,
  model_type: 'qwen2',
  num_attention_heads: 14,
  num_hidden_layers: 24,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  sliding_window: 32768,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.40.1',
  use_cache: true,
  use_mrope: false,
  use_sliding_window: false,
  vocab_size: 151936,
};

// Qwen/Qwen3-0.6B (explicit head_dim 128 with d / H = 64, q/k norms).
const QWEN3_06B = {
  architectures: ['Qwen3ForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 1024,
  initializer_range: 0.02,
  intermediate_size: 3072,
  max_position_embeddings: 40960,
  max_window_layers: 28,
  model_type: 'qwen3',
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: null,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.51.0',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

// mistralai/Mistral-7B-v0.1 (a 4096 sliding window on every layer).
const MISTRAL_7B = {
  architectures: ['MistralForCausalLM'],
  bos_token_id: 1,
  eos_token_id: 2,
  hidden_act: 'silu',
  hidden_size: 4096,
  initializer_range: 0.02,
  intermediate_size: 14336,
  max_position_embeddings: 32768,
  model_type: 'mistral',
  num_attention_heads: 32,
  num_hidden_layers: 32,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-5,
  rope_theta: 10000.0,
  sliding_window: 4096,
  tie_word_embeddings: false,
  torch_dtype: 'bfloat16',
  transformers_version: '4.34.0.dev0',
  use_cache: true,
  vocab_size: 32000,
};

const fullAttention = (L: number) => Array.from({ length: L }, () => null);

describe('parseModelConfig: the Llama family, each flavour', () => {
  it('reads SmolLM2-135M (GQA 9/3, tied, classic keys)', () => {
    expect(llama(SMOLLM2_135M)).toEqual({
      family: 'llama',
      flavour: 'llama',
      vocabSize: 49152,
      hiddenSize: 576,
      numLayers: 30,
      numHeads: 9,
      numKvHeads: 3,
      headDim: 64,
      intermediateSize: 1536,
      rmsNormEps: 1e-5,
      ropeTheta: 100000,
      ropeScaling: { type: 'default' },
      rotaryDim: 64,
      attentionBias: false,
      oProjBias: false,
      mlpBias: false,
      qkNorm: false,
      slidingWindow: fullAttention(30),
      tieWordEmbeddings: true,
      maxPositionEmbeddings: 8192,
    } satisfies LlamaConfig);
  });

  it('reads Llama 3.2 with llama3 scaling, and its transformers 5.x form to the same config', () => {
    const c = llama(LLAMA32_1B);
    expect(c.ropeScaling).toEqual({
      type: 'llama3',
      factor: 32,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositionEmbeddings: 8192,
    });
    expect([c.ropeTheta, c.headDim, c.numKvHeads]).toEqual([500000, 64, 8]);
    expect(llama(LLAMA32_1B_V5)).toEqual(c);
  });

  it('reads Qwen2.5-0.5B: q/k/v biases always, no o_proj bias, the window off', () => {
    const c = llama(QWEN25_05B);
    expect(c.flavour).toBe('qwen2');
    expect([c.attentionBias, c.oProjBias, c.mlpBias, c.qkNorm]).toEqual([true, false, false, false]);
    expect(c.slidingWindow).toEqual(fullAttention(24));
    expect([c.numHeads, c.numKvHeads, c.headDim, c.tieWordEmbeddings]).toEqual([14, 2, 64, true]);
    // attention_bias: false does not remove Qwen2's q/k/v biases (Qwen2Attention hard-codes bias=True).
    expect(llama({ ...QWEN25_05B, attention_bias: false }).attentionBias).toBe(true);
  });

  it('reads Qwen3-0.6B: explicit head_dim 128 (H * hd != d), q/k norms, attention_bias for all four', () => {
    const c = llama(QWEN3_06B);
    expect([c.flavour, c.headDim, c.numHeads * c.headDim, c.hiddenSize, c.qkNorm]).toEqual([
      'qwen3',
      128,
      2048,
      1024,
      true,
    ]);
    const b = llama({ ...QWEN3_06B, attention_bias: true });
    expect([b.attentionBias, b.oProjBias]).toEqual([true, true]);
    // Qwen3Config's class default head_dim is 128 whatever d / H is.
    const { head_dim: _h, ...noHd } = QWEN3_06B;
    expect(llama({ ...noHd, hidden_size: 512 }).headDim).toBe(128);
  });

  it('reads Mistral 7B: one window on every layer; sliding_window null is full attention', () => {
    expect(llama(MISTRAL_7B).slidingWindow).toEqual(Array.from({ length: 32 }, () => 4096));
    expect(llama({ ...MISTRAL_7B, sliding_window: null }).slidingWindow).toEqual(fullAttention(32));
    // MistralConfig's class default is a 4096 window.
    const { sliding_window: _w, ...noWindow } = MISTRAL_7B;
    expect(llama(noWindow).slidingWindow[0]).toBe(4096);
  });

  it('places Qwen sliding layers at i >= max_window_layers, or where layer_types says', () => {
    const q = { ...QWEN25_05B, num_hidden_layers: 4, use_sliding_window: true, sliding_window: 7 };
    expect(llama({ ...q, max_window_layers: 2 }).slidingWindow).toEqual([null, null, 7, 7]);
    expect(llama({ ...q, max_window_layers: 0 }).slidingWindow).toEqual([7, 7, 7, 7]);
    const lt = ['sliding_attention', 'full_attention', 'sliding_attention', 'full_attention'];
    expect(llama({ ...q, layer_types: lt }).slidingWindow).toEqual([7, null, 7, null]);
    // use_sliding_window false: no window anywhere (HF sets sliding_window to None).
    expect(llama({ ...q, use_sliding_window: false, max_window_layers: 0 }).slidingWindow).toEqual(
      fullAttention(4),
    );
  });

  it('reads linear scaling in both key styles, and the classic `type` spelling', () => {
    const a = llama({ ...SMOLLM2_135M, rope_scaling: { type: 'linear', factor: 4 } });
    const b = llama({
      ...SMOLLM2_135M,
      rope_theta: undefined,
      rope_parameters: { rope_type: 'linear', factor: 4, rope_theta: 100000 },
    });
    expect(a.ropeScaling).toEqual({ type: 'linear', factor: 4 });
    expect(b).toEqual(a);
  });

  it('takes llama3 original_max_position_embeddings from the top level first, then falls back to max_position_embeddings', () => {
    const rs = { ...LLAMA32_1B.rope_scaling };
    const top = llama({ ...LLAMA32_1B, original_max_position_embeddings: 4096 });
    expect(top.ropeScaling).toMatchObject({ originalMaxPositionEmbeddings: 4096 });
    const { original_max_position_embeddings: _o, ...noOmp } = rs;
    const fb = llama({ ...LLAMA32_1B, rope_scaling: noOmp });
    expect(fb.ropeScaling).toMatchObject({ originalMaxPositionEmbeddings: 131072 });
  });

  it('applies the HF defaults: KV heads = H (llama), eps 1e-6, theta 10000, no biases, untied', () => {
    const c = llama({
      model_type: 'llama',
      vocab_size: 300,
      hidden_size: 72,
      num_hidden_layers: 2,
      num_attention_heads: 6,
      intermediate_size: 100,
    });
    expect(c).toMatchObject({
      numKvHeads: 6,
      headDim: 12,
      rmsNormEps: 1e-6,
      ropeTheta: 10000,
      ropeScaling: { type: 'default' },
      attentionBias: false,
      oProjBias: false,
      mlpBias: false,
      tieWordEmbeddings: false,
      maxPositionEmbeddings: 2048,
    });
    // num_key_value_heads: null is H in every flavour; absent is the class default (Mistral 8, Qwen 32).
    expect(llama({ ...MISTRAL_7B, num_key_value_heads: null }).numKvHeads).toBe(32);
    const { num_key_value_heads: _kv, ...noKv } = MISTRAL_7B;
    expect(llama(noKv).numKvHeads).toBe(8);
    expect(llama({ ...QWEN3_06B, num_attention_heads: 64, num_key_value_heads: undefined }).numKvHeads).toBe(
      32,
    );
    const b = llama({ ...SMOLLM2_135M, attention_bias: true, mlp_bias: true });
    expect([b.attentionBias, b.oProjBias, b.mlpBias]).toEqual([true, true, true]);
  });

  it('still reads GPT-NeoX (tagged) and parses text', () => {
    const neox = parseModelConfig({
      model_type: 'gpt_neox',
      vocab_size: 300,
      hidden_size: 64,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      intermediate_size: 128,
    });
    expect(neox.family).toBe('gpt_neox');
    expect(parseModelConfigText(`\ufeff${JSON.stringify(QWEN3_06B)}`).family).toBe('llama');
    expect(loadError(() => parseModelConfigText('{"model_type": "llama",')).message).toMatch(
      /^config\.json: not valid JSON/,
    );
  });
});

describe('parseModelConfig: the Llama family refuses by name, in one line', () => {
  const cases: [string, Record<string, unknown>, Record<string, unknown>, string, string][] = [
    // [what, base, overrides (undefined deletes), key, message fragment]
    [
      'an unknown model_type',
      SMOLLM2_135M,
      { model_type: 'gemma' },
      'model_type',
      "model_type 'gemma' is not supported (only 'gpt_neox', 'llama', 'qwen2', 'qwen3', 'mistral')",
    ],
    [
      'model_type not a string',
      SMOLLM2_135M,
      { model_type: 7 },
      'model_type',
      "'model_type' must be a string",
    ],
    [
      'yarn',
      SMOLLM2_135M,
      { rope_scaling: { rope_type: 'yarn', factor: 4 } },
      'rope_scaling.rope_type',
      "rope type 'yarn' is not supported (only 'default', 'linear' and 'llama3')",
    ],
    [
      'dynamic',
      SMOLLM2_135M,
      { rope_scaling: { type: 'dynamic', factor: 2 } },
      'rope_scaling.rope_type',
      "rope type 'dynamic' is not supported",
    ],
    [
      'longrope (5.x)',
      LLAMA32_1B_V5,
      { rope_parameters: { rope_type: 'longrope', rope_theta: 1e4 } },
      'rope_parameters.rope_type',
      "rope type 'longrope'",
    ],
    [
      'gelu',
      SMOLLM2_135M,
      { hidden_act: 'gelu' },
      'hidden_act',
      "hidden_act 'gelu' is not supported (the Llama family's SwiGLU uses 'silu')",
    ],
    ['gelu_pytorch_tanh', QWEN3_06B, { hidden_act: 'gelu_pytorch_tanh' }, 'hidden_act', 'is not supported'],
    [
      'GQA that does not divide',
      SMOLLM2_135M,
      { num_key_value_heads: 4 },
      'num_key_value_heads',
      'num_attention_heads 9 is not a multiple of num_key_value_heads 4',
    ],
    ['KV heads of 0', SMOLLM2_135M, { num_key_value_heads: 0 }, 'num_key_value_heads', 'positive integer'],
    [
      'missing KV heads (qwen2: the class default 32)',
      QWEN25_05B,
      { num_key_value_heads: undefined },
      'num_key_value_heads',
      'num_attention_heads 14 is not a multiple of num_key_value_heads 32',
    ],
    ['odd head_dim', LLAMA32_1B, { head_dim: 63 }, 'head_dim', 'head_dim 63 must be even'],
    ['head_dim as a string', LLAMA32_1B, { head_dim: '64' }, 'head_dim', 'positive integer'],
    [
      'Qwen3 head_dim null',
      QWEN3_06B,
      { head_dim: null },
      'head_dim',
      'head_dim is null: Qwen3 takes it as given',
    ],
    [
      'indivisible d without head_dim',
      SMOLLM2_135M,
      { num_attention_heads: 7, num_key_value_heads: 7 },
      'num_attention_heads',
      'not divisible',
    ],
    [
      'partial rotary',
      SMOLLM2_135M,
      { partial_rotary_factor: 0.5 },
      'partial_rotary_factor',
      'rotates the whole head',
    ],
    [
      'llama3 without low_freq_factor',
      LLAMA32_1B,
      { rope_scaling: { rope_type: 'llama3', factor: 8, high_freq_factor: 4 } },
      'rope_scaling.low_freq_factor',
      "needs 'rope_scaling.low_freq_factor'",
    ],
    [
      'llama3 with high <= low',
      LLAMA32_1B,
      { rope_scaling: { ...LLAMA32_1B.rope_scaling, high_freq_factor: 1 } },
      'rope_scaling.high_freq_factor',
      'must exceed low_freq_factor',
    ],
    [
      'linear without factor',
      SMOLLM2_135M,
      { rope_scaling: { type: 'linear' } },
      'rope_scaling.factor',
      "needs 'rope_scaling.factor'",
    ],
    [
      'a negative factor',
      SMOLLM2_135M,
      { rope_scaling: { type: 'linear', factor: -2 } },
      'rope_scaling.factor',
      'must be > 0',
    ],
    [
      'a yarn key under llama3',
      LLAMA32_1B,
      { rope_scaling: { ...LLAMA32_1B.rope_scaling, beta_fast: 32 } },
      'rope_scaling.beta_fast',
      "is not supported with rope type 'llama3'",
    ],
    [
      'rope_type and type disagreeing',
      SMOLLM2_135M,
      { rope_scaling: { type: 'linear', rope_type: 'default', factor: 2 } },
      'rope_scaling.type',
      'disagrees',
    ],
    ['two thetas', LLAMA32_1B_V5, { rope_theta: 10000 }, 'rope_theta', 'disagrees'],
    ['theta 0', SMOLLM2_135M, { rope_theta: 0 }, 'rope_theta', 'must be > 0'],
    ['theta as a string', SMOLLM2_135M, { rope_theta: '1e5' }, 'rope_theta', 'must be a finite number'],
    ['eps 0', SMOLLM2_135M, { rms_norm_eps: 0 }, 'rms_norm_eps', "'rms_norm_eps' must be > 0"],
    [
      'rope_scaling an array',
      SMOLLM2_135M,
      { rope_scaling: [1] },
      'rope_scaling',
      'must be an object or null',
    ],
    [
      'a quantized checkpoint',
      QWEN3_06B,
      { quantization_config: { quant_method: 'awq' } },
      'quantization_config',
      'quantization_config is not supported',
    ],
    [
      'sliding layers on llama',
      SMOLLM2_135M,
      { layer_types: Array.from({ length: 30 }, () => 'sliding_attention') },
      'layer_types',
      "not part of model_type 'llama'",
    ],
    [
      'layer_types of the wrong length',
      QWEN25_05B,
      { layer_types: ['full_attention'] },
      'layer_types',
      'must list 24 entries',
    ],
    [
      'an unknown layer type',
      QWEN25_05B,
      { layer_types: Array.from({ length: 24 }, () => 'chunked_attention') },
      'layer_types',
      'must list 24 entries',
    ],
    [
      'sliding layers with no window',
      QWEN25_05B,
      { layer_types: Array.from({ length: 24 }, () => 'sliding_attention') },
      'layer_types',
      'no sliding window is set',
    ],
    [
      'Mistral layer_types disagreeing with its window',
      MISTRAL_7B,
      { layer_types: Array.from({ length: 32 }, () => 'full_attention') },
      'layer_types',
      'disagrees with sliding_window 4096',
    ],
    ['a window of 0', MISTRAL_7B, { sliding_window: 0 }, 'sliding_window', 'positive integer'],
    [
      'max_window_layers negative',
      QWEN25_05B,
      { use_sliding_window: true, max_window_layers: -1 },
      'max_window_layers',
      'non-negative integer',
    ],
    [
      'use_sliding_window a string',
      QWEN25_05B,
      { use_sliding_window: 'yes' },
      'use_sliding_window',
      'must be true or false',
    ],
    [
      'tie_word_embeddings a number',
      QWEN3_06B,
      { tie_word_embeddings: 1 },
      'tie_word_embeddings',
      'must be true or false',
    ],
    [
      'an encoder-decoder',
      SMOLLM2_135M,
      { is_encoder_decoder: true },
      'is_encoder_decoder',
      'is not supported',
    ],
  ];
  it.each(cases)('refuses %s', (_what, base, over, key, fragment) => {
    const json: Record<string, unknown> = { ...base, ...over };
    for (const [k, v] of Object.entries(over)) if (v === undefined) delete json[k];
    const e = loadError(() => parseModelConfig(json));
    expect(e.key).toBe(key);
    expect(e.message).toContain(fragment);
    expect(e.message).toMatch(/^config\.json: /);
    expect(e.message).not.toContain('\n');
  });

  it('never throws anything but ModelLoadError on wrong-typed values (every key of every flavour x every value)', () => {
    const values: unknown[] = [
      null,
      'x',
      true,
      false,
      -1,
      0,
      0.5,
      1,
      3,
      1e300,
      Number.NaN,
      [],
      [1],
      {},
      { rope_type: 'llama3' },
      { type: 'linear', factor: 'x' },
    ];
    let ok = 0;
    let refused = 0;
    for (const base of [SMOLLM2_135M, LLAMA32_1B, LLAMA32_1B_V5, QWEN25_05B, QWEN3_06B, MISTRAL_7B] as Record<
      string,
      unknown
    >[]) {
      const keys = [
        ...Object.keys(base),
        'layer_types',
        'head_dim',
        'rope_parameters',
        'original_max_position_embeddings',
      ];
      for (const key of keys) {
        for (const v of values) {
          try {
            const c = parseModelConfig({ ...base, [key]: v });
            if (c.family === 'llama') {
              // Whatever was accepted is a usable model: positive sizes, GQA dividing, an even head.
              expect(c.numHeads % c.numKvHeads).toBe(0);
              expect(c.headDim % 2).toBe(0);
              expect(c.slidingWindow).toHaveLength(c.numLayers);
              expect(Number.isFinite(c.ropeTheta) && c.ropeTheta > 0).toBe(true);
            }
            ok++;
          } catch (e) {
            if (!(e instanceof ModelLoadError))
              throw new Error(`${key}=${JSON.stringify(v)} threw ${String(e)}`);
            expect(e.message).not.toContain('\n');
            refused++;
          }
        }
      }
    }
    expect(ok).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(100);
  });
});
