import { describe, expect, it } from 'vitest';
import type { NeoXConfig } from '../numeric/types';
import { parseConfig, parseConfigText } from './config';
import { ModelLoadError } from './errors';

/** Runs fn and returns the ModelLoadError it throws (anything else fails the test). */
function loadError(fn: () => unknown): ModelLoadError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ModelLoadError) return e;
    throw e;
  }
  throw new Error('expected a ModelLoadError, nothing was thrown');
}

// EleutherAI/pythia-70m config.json (transformers 4.24 era, classic keys).
const PYTHIA_70M_CLASSIC = {
  architectures: ['GPTNeoXForCausalLM'],
  bos_token_id: 0,
  eos_token_id: 0,
  hidden_act: 'gelu',
  hidden_size: 512,
  initializer_range: 0.02,
  intermediate_size: 2048,
  layer_norm_eps: 1e-5,
  max_position_embeddings: 2048,
  model_type: 'gpt_neox',
  num_attention_heads: 8,
  num_hidden_layers: 6,
  rotary_emb_base: 10000,
  rotary_pct: 0.25,
  tie_word_embeddings: false,
  torch_dtype: 'float16',
  transformers_version: '4.24.0',
  use_cache: true,
  use_parallel_residual: true,
  vocab_size: 50304,
};

// The same model as saved by transformers 5.x (rope_parameters, no rotary_* keys).
const PYTHIA_70M_V5 = {
  architectures: ['GPTNeoXForCausalLM'],
  attention_bias: true,
  attention_dropout: 0.0,
  bos_token_id: 0,
  classifier_dropout: 0.1,
  dtype: 'float32',
  eos_token_id: 0,
  hidden_act: 'gelu',
  hidden_dropout: 0.0,
  hidden_size: 512,
  initializer_range: 0.02,
  intermediate_size: 2048,
  layer_norm_eps: 1e-5,
  max_position_embeddings: 2048,
  model_type: 'gpt_neox',
  num_attention_heads: 8,
  num_hidden_layers: 6,
  rope_parameters: { partial_rotary_factor: 0.25, rope_theta: 10000, rope_type: 'default' },
  tie_word_embeddings: false,
  transformers_version: '5.0.0',
  use_cache: true,
  use_parallel_residual: true,
  vocab_size: 50304,
};

const PYTHIA_70M: NeoXConfig = {
  vocabSize: 50304,
  hiddenSize: 512,
  numLayers: 6,
  numHeads: 8,
  headDim: 64,
  intermediateSize: 2048,
  rotaryNdims: 16,
  rotaryBase: 10000,
  layerNormEps: 1e-5,
  useParallelResidual: true,
  maxPositionEmbeddings: 2048,
  attentionBias: true,
  tieWordEmbeddings: false,
};

const MINIMAL = {
  vocab_size: 256,
  hidden_size: 64,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  intermediate_size: 256,
};

describe('parseConfig: key styles', () => {
  it('reads the classic Pythia config', () => {
    expect(parseConfig(PYTHIA_70M_CLASSIC)).toEqual(PYTHIA_70M);
  });

  it('reads the transformers 5.x rope_parameters config to the same NeoXConfig', () => {
    expect(parseConfig(PYTHIA_70M_V5)).toEqual(PYTHIA_70M);
    expect(parseConfig(PYTHIA_70M_V5)).toEqual(parseConfig(PYTHIA_70M_CLASSIC));
  });

  it('reads non-default rotary settings identically in both styles', () => {
    const classic = { ...MINIMAL, rotary_pct: 0.5, rotary_emb_base: 500 };
    const v5 = {
      ...MINIMAL,
      rope_parameters: { rope_type: 'default', rope_theta: 500, partial_rotary_factor: 0.5 },
    };
    const a = parseConfig(classic);
    expect(a.rotaryNdims).toBe(8);
    expect(a.rotaryBase).toBe(500);
    expect(parseConfig(v5)).toEqual(a);
  });

  it('accepts the 4.4x form that carries both spellings when they agree', () => {
    const both = {
      ...PYTHIA_70M_CLASSIC,
      rope_theta: 10000,
      partial_rotary_factor: 0.25,
      rope_scaling: null,
    };
    expect(parseConfig(both)).toEqual(PYTHIA_70M);
  });

  it('accepts rope_scaling null or absent, and a default-type rope_scaling', () => {
    expect(parseConfig({ ...PYTHIA_70M_CLASSIC, rope_scaling: null })).toEqual(PYTHIA_70M);
    expect(parseConfig({ ...PYTHIA_70M_V5, rope_scaling: null })).toEqual(PYTHIA_70M);
    expect(parseConfig({ ...PYTHIA_70M_CLASSIC, rope_scaling: { rope_type: 'default' } })).toEqual(
      PYTHIA_70M,
    );
    expect(parseConfig({ ...PYTHIA_70M_V5, rope_parameters: null })).toEqual(PYTHIA_70M); // all defaults
  });

  it('applies the HF GPTNeoXConfig defaults', () => {
    expect(parseConfig(MINIMAL)).toEqual({
      vocabSize: 256,
      hiddenSize: 64,
      numLayers: 2,
      numHeads: 4,
      headDim: 16,
      intermediateSize: 256,
      rotaryNdims: 4, // floor(16 * 0.25)
      rotaryBase: 10000,
      layerNormEps: 1e-5,
      useParallelResidual: true,
      maxPositionEmbeddings: 2048,
      attentionBias: true,
      tieWordEmbeddings: false,
    } satisfies NeoXConfig);
  });

  it('reads the booleans and eps as given', () => {
    const c = parseConfig({
      ...MINIMAL,
      use_parallel_residual: false,
      attention_bias: false,
      tie_word_embeddings: true,
      layer_norm_eps: 1e-6,
      max_position_embeddings: 128,
    });
    expect([c.useParallelResidual, c.attentionBias, c.tieWordEmbeddings]).toEqual([false, false, true]);
    expect(c.layerNormEps).toBe(1e-6);
    expect(c.maxPositionEmbeddings).toBe(128);
  });

  it('computes rotaryNdims as int(head_dim * rotary_pct), like HF', () => {
    // head_dim 20: 20 * 0.3 = 6.000000000000001 -> 6; 20 * 0.25 = 5 is odd (refused below)
    expect(parseConfig({ ...MINIMAL, hidden_size: 80, rotary_pct: 0.3 }).rotaryNdims).toBe(6);
    // head_dim 18: 18 * 0.25 = 4.5 -> 4
    expect(parseConfig({ ...MINIMAL, hidden_size: 72, rotary_pct: 0.25 }).rotaryNdims).toBe(4);
    expect(parseConfig({ ...MINIMAL, rotary_pct: 1 }).rotaryNdims).toBe(16);
    expect(parseConfig({ ...MINIMAL, rotary_pct: 0 }).rotaryNdims).toBe(0);
  });

  it('parses text and reports bad JSON', () => {
    expect(parseConfigText(JSON.stringify(PYTHIA_70M_V5))).toEqual(PYTHIA_70M);
    const e = loadError(() => parseConfigText('{"vocab_size": 3,'));
    expect(e.message).toMatch(/^config\.json: not valid JSON/);
    expect(loadError(() => parseConfigText('', 'x/config.json')).message).toMatch(
      /^x\/config\.json: not valid JSON/,
    );
  });
});

describe('parseConfig: refusals name the key', () => {
  const cases: [string, Record<string, unknown>, string, string][] = [
    // [what, overrides of MINIMAL (undefined deletes), key, message fragment]
    ['missing vocab', { vocab_size: undefined }, 'vocab_size', "missing required key 'vocab_size'"],
    ['missing layers', { num_hidden_layers: undefined }, 'num_hidden_layers', 'missing required key'],
    ['missing ff', { intermediate_size: undefined }, 'intermediate_size', 'missing required key'],
    [
      'string number',
      { hidden_size: '64' },
      'hidden_size',
      "'hidden_size' must be a positive integer, found string '64'",
    ],
    ['zero heads', { num_attention_heads: 0 }, 'num_attention_heads', 'positive integer, found number 0'],
    ['negative layers', { num_hidden_layers: -2 }, 'num_hidden_layers', 'positive integer'],
    ['fraction vocab', { vocab_size: 256.5 }, 'vocab_size', 'found number 256.5'],
    ['null ff', { intermediate_size: null }, 'intermediate_size', 'found null'],
    [
      'huge hidden',
      { hidden_size: 131072, num_attention_heads: 4 },
      'hidden_size',
      'exceeds the sanity limit 65536',
    ],
    ['huge layers', { num_hidden_layers: 5000 }, 'num_hidden_layers', 'exceeds the sanity limit 1024'],
    ['huge vocab', { vocab_size: 2e7 }, 'vocab_size', 'exceeds the sanity limit'],
    ['huge ff', { intermediate_size: 1e9 }, 'intermediate_size', 'exceeds the sanity limit'],
    [
      'huge positions',
      { max_position_embeddings: 1e12 },
      'max_position_embeddings',
      'exceeds the sanity limit',
    ],
    [
      'indivisible',
      { num_attention_heads: 5 },
      'num_attention_heads',
      'hidden_size 64 is not divisible by num_attention_heads 5',
    ],
    [
      'gelu_new',
      { hidden_act: 'gelu_new' },
      'hidden_act',
      "hidden_act 'gelu_new' is not supported (only exact 'gelu')",
    ],
    ['gelu_fast', { hidden_act: 'gelu_fast' }, 'hidden_act', "hidden_act 'gelu_fast' is not supported"],
    ['relu', { hidden_act: 'relu' }, 'hidden_act', "hidden_act 'relu' is not supported"],
    ['act not string', { hidden_act: 3 }, 'hidden_act', "'hidden_act' must be a string"],
    [
      'model_type',
      { model_type: 'llama' },
      'model_type',
      "model_type 'llama' is not supported (only 'gpt_neox')",
    ],
    [
      'linear scaling',
      { rope_scaling: { type: 'linear', factor: 2 } },
      'rope_scaling.type',
      "rope_scaling.type 'linear' is not supported",
    ],
    [
      'dynamic scaling',
      { rope_scaling: { rope_type: 'dynamic', factor: 2 } },
      'rope_scaling.rope_type',
      "'dynamic'",
    ],
    [
      'llama3 rope',
      { rope_parameters: { rope_type: 'llama3', rope_theta: 1e4 } },
      'rope_parameters.rope_type',
      "rope_parameters.rope_type 'llama3' is not supported",
    ],
    [
      'yarn rope',
      { rope_parameters: { rope_type: 'yarn' } },
      'rope_parameters.rope_type',
      "'yarn' is not supported",
    ],
    [
      'rope factor',
      { rope_parameters: { rope_type: 'default', factor: 4 } },
      'rope_parameters.factor',
      "'rope_parameters.factor' is not supported",
    ],
    [
      'per-layer rope',
      { rope_parameters: { full_attention: { rope_type: 'default' } } },
      'rope_parameters.full_attention',
      'is not supported',
    ],
    [
      'rope not object',
      { rope_parameters: 'default' },
      'rope_parameters',
      "'rope_parameters' must be an object or null",
    ],
    [
      'rope_type number',
      { rope_parameters: { rope_type: 1 } },
      'rope_parameters.rope_type',
      'must be a string',
    ],
    [
      'theta string',
      { rope_parameters: { rope_theta: '10000' } },
      'rope_parameters.rope_theta',
      'must be a finite number',
    ],
    [
      'pct string',
      { rotary_pct: '0.25' },
      'rotary_pct',
      "'rotary_pct' must be a finite number, found string '0.25'",
    ],
    [
      'base string',
      { rotary_emb_base: '1e4' },
      'rotary_emb_base',
      "'rotary_emb_base' must be a finite number",
    ],
    ['base zero', { rotary_emb_base: 0 }, 'rotary_emb_base', "'rotary_emb_base' (rotary base) must be > 0"],
    ['theta negative', { rope_parameters: { rope_theta: -5 } }, 'rope_parameters.rope_theta', 'must be > 0'],
    ['pct > 1', { rotary_pct: 1.5 }, 'rotary_pct', 'must be in [0, 1], found 1.5'],
    [
      'pct negative',
      { rope_parameters: { partial_rotary_factor: -0.25 } },
      'rope_parameters.partial_rotary_factor',
      'must be in [0, 1]',
    ],
    [
      'odd rotary',
      { hidden_size: 48, num_attention_heads: 4, rotary_pct: 0.25 },
      'rotary_pct',
      '= 3 must be even',
    ],
    [
      'disagreeing pct',
      { rotary_pct: 0.5, rope_parameters: { partial_rotary_factor: 0.25 } },
      'rotary_pct',
      "'rotary_pct' = 0.5 disagrees with 'rope_parameters.partial_rotary_factor' = 0.25",
    ],
    ['disagreeing base', { rotary_emb_base: 10000, rope_theta: 20000 }, 'rotary_emb_base', 'disagrees with'],
    ['eps zero', { layer_norm_eps: 0 }, 'layer_norm_eps', "'layer_norm_eps' must be > 0"],
    ['eps string', { layer_norm_eps: '1e-5' }, 'layer_norm_eps', 'must be a finite number'],
    ['eps negative', { layer_norm_eps: -1e-5 }, 'layer_norm_eps', 'must be > 0'],
    [
      'bool as string',
      { use_parallel_residual: 'true' },
      'use_parallel_residual',
      "'use_parallel_residual' must be true or false, found string 'true'",
    ],
    ['bias as number', { attention_bias: 1 }, 'attention_bias', 'must be true or false'],
    ['tie null', { tie_word_embeddings: null }, 'tie_word_embeddings', 'must be true or false, found null'],
    [
      'sliding window',
      { sliding_window: 4096 },
      'sliding_window',
      'sliding_window (number 4096) is not supported',
    ],
    ['use_sliding_window', { use_sliding_window: true }, 'use_sliding_window', 'not supported'],
    ['gqa', { num_key_value_heads: 2 }, 'num_key_value_heads', 'grouped-query attention'],
    ['head_dim', { head_dim: 32 }, 'head_dim', 'head_dim number 32 is not supported'],
    ['layer_types', { layer_types: ['sliding_attention', 'full_attention'] }, 'layer_types', 'not supported'],
    ['quantized', { quantization_config: { quant_method: 'gptq' } }, 'quantization_config', 'quantized'],
    ['cross attention', { add_cross_attention: true }, 'add_cross_attention', 'not supported'],
  ];
  for (const [what, overrides, key, fragment] of cases) {
    it(`refuses ${what}`, () => {
      const cfg: Record<string, unknown> = { ...MINIMAL };
      for (const [k, v] of Object.entries(overrides)) {
        if (v === undefined) delete cfg[k];
        else cfg[k] = v;
      }
      const e = loadError(() => parseConfig(cfg));
      expect(e.file).toBe('config.json');
      expect(e.key).toBe(key);
      expect(e.message.startsWith('config.json: ')).toBe(true);
      expect(e.message).toContain(fragment);
      expect(e.message).toContain(key);
      expect(e.message).not.toContain('\n');
    });
  }

  it('accepts the unsupported-option keys at their harmless values', () => {
    const c = parseConfig({
      ...MINIMAL,
      sliding_window: null,
      use_sliding_window: false,
      num_key_value_heads: 4,
      head_dim: 16,
      layer_types: ['full_attention', 'full_attention'],
      quantization_config: null,
      add_cross_attention: false,
      model_type: 'gpt_neox',
    });
    expect(c.headDim).toBe(16);
  });

  it('refuses JSON that is not an object', () => {
    for (const [v, found] of [
      [[], 'an array'],
      [null, 'null'],
      [3, 'number 3'],
      ['x', "string 'x'"],
    ] as const) {
      const e = loadError(() => parseConfig(v, 'cfg.json'));
      expect(e.message).toBe(`cfg.json: expected a JSON object, found ${found}`);
    }
  });

  it('keeps messages to one line for hostile strings', () => {
    const e = loadError(() => parseConfig({ ...MINIMAL, hidden_act: 'gelu\n\u2028x' }));
    expect(e.message).not.toMatch(/[\n\u2028]/);
    expect(e.message).toContain('hidden_act');
  });

  it('never throws anything but ModelLoadError on wrong-typed values (every key x every value)', () => {
    const values: unknown[] = [
      null,
      'x',
      '1',
      true,
      false,
      -1,
      0,
      0.5,
      1,
      3,
      1e300,
      [],
      [1],
      {},
      { rope_type: 'default' },
    ];
    const base = { ...PYTHIA_70M_V5, rotary_pct: 0.25, rope_scaling: null, sliding_window: null };
    let ok = 0;
    let refused = 0;
    for (const key of Object.keys(base)) {
      for (const v of values) {
        try {
          parseConfig({ ...base, [key]: v });
          ok++;
        } catch (e) {
          if (!(e instanceof ModelLoadError))
            throw new Error(`${key}=${JSON.stringify(v)} threw ${String(e)}`);
          refused++;
        }
      }
    }
    expect(ok).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });
});
