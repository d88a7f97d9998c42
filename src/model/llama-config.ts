// Hugging Face config.json of the Llama family (model_type llama, qwen2, qwen3, mistral) -> LlamaConfig, in both
// key styles (classic `rope_theta` + `rope_scaling`, transformers 5.x `rope_parameters`), each flavour with its own
// HF class defaults and its own fixed choices (docs/FAMILIES.md); every option this engine does not implement is
// refused by name, in one line. The words for what a false flag leaves out of a checkpoint and two small configs of
// the family (for tests and the GPU self-test) close the file.

import type { LlamaConfig, LlamaFlavour, RopeScaling } from '../numeric/types';
import type { ConfigFlag } from '../ops/types';
import { agree, isObject, type Json, LIMITS, own, Reader } from './config';
import { describeJson, quoteName } from './errors';

export const LLAMA_FLAVOURS: readonly LlamaFlavour[] = ['llama', 'qwen2', 'qwen3', 'mistral'];

/** The HF config class defaults each flavour falls back to when config.json leaves a key out. */
const FLAVOUR_DEFAULTS: Record<
  LlamaFlavour,
  {
    maxPositionEmbeddings: number;
    /** The KV heads when config.json leaves the key out (null: H); `null` in the file is H in every flavour. */
    kvHeads: number | null;
    /** Qwen3's class default head_dim is 128, not d / H. */
    headDim: number | null;
    slidingWindow: number | null;
  }
> = {
  llama: { maxPositionEmbeddings: 2048, kvHeads: null, headDim: null, slidingWindow: null },
  qwen2: { maxPositionEmbeddings: 32768, kvHeads: 32, headDim: null, slidingWindow: 4096 },
  qwen3: { maxPositionEmbeddings: 32768, kvHeads: 32, headDim: 128, slidingWindow: 4096 },
  mistral: {
    maxPositionEmbeddings: 131072,
    kvHeads: 8,
    headDim: null,
    slidingWindow: 4096,
  },
};

const DEFAULTS = { rms_norm_eps: 1e-6, rope_theta: 10000, max_window_layers: 28 } as const;

/** The keys each rope type may carry in rope_parameters / rope_scaling. */
const ROPE_TYPE_KEYS: Record<RopeScaling['type'], readonly string[]> = {
  default: [],
  linear: ['factor'],
  llama3: ['factor', 'low_freq_factor', 'high_freq_factor', 'original_max_position_embeddings'],
};
const ROPE_COMMON_KEYS = ['rope_type', 'type', 'rope_theta', 'partial_rotary_factor'];

function ropeTypeOf(r: Reader, key: string, v: Json): RopeScaling['type'] | undefined {
  let found: string | undefined;
  for (const typeKey of ['rope_type', 'type']) {
    const t = own(v, typeKey);
    if (t === undefined) continue;
    if (typeof t !== 'string') {
      r.fail(`${key}.${typeKey}`, `'${key}.${typeKey}' must be a string, found ${describeJson(t)}`);
    }
    if (found !== undefined && t !== found) {
      r.fail(`${key}.${typeKey}`, `'${key}.${typeKey}' ${quoteName(t)} disagrees with ${quoteName(found)}`);
    }
    found = t;
  }
  if (found === undefined) return undefined;
  if (!Object.hasOwn(ROPE_TYPE_KEYS, found)) {
    r.fail(
      `${key}.rope_type`,
      `rope type ${quoteName(found)} is not supported (only 'default', 'linear' and 'llama3')`,
    );
  }
  return found as RopeScaling['type'];
}

/** A positive finite number at obj[key] (path for messages), or undefined when absent. */
function positive(r: Reader, obj: Json, key: string, path: string): number | undefined {
  const v = r.num(obj, key, path);
  if (v !== undefined && !(v > 0)) r.fail(path, `'${path}' must be > 0, found ${v}`);
  return v;
}

/** rope_parameters (5.x) or rope_scaling (classic): one object at most, its type and its parameters checked. */
function ropeScaling(r: Reader, maxPos: number): { scaling: RopeScaling; theta: number } {
  const objs: [string, Json][] = [];
  for (const key of ['rope_parameters', 'rope_scaling']) {
    const v = own(r.obj, key);
    if (v === undefined || v === null) continue;
    if (!isObject(v)) r.fail(key, `'${key}' must be an object or null, found ${describeJson(v)}`);
    objs.push([key, v]);
  }
  const [theta, thetaKey] = agree(
    r,
    [
      ...objs.map(
        ([k, o]) =>
          [`${k}.rope_theta`, r.num(o, 'rope_theta', `${k}.rope_theta`)] as [string, number | undefined],
      ),
      ['rope_theta', r.num(r.obj, 'rope_theta', 'rope_theta')],
    ],
    'rope_theta',
    DEFAULTS.rope_theta,
  );
  if (!(theta > 0)) r.fail(thetaKey, `'${thetaKey}' (rope theta) must be > 0, found ${theta}`);

  // Rotate-half over the whole head: the Llama family's default RoPE has no partial rotation.
  for (const [path, v] of [
    ...objs.map(([k, o]) => [`${k}.partial_rotary_factor`, own(o, 'partial_rotary_factor')] as const),
    ['partial_rotary_factor', own(r.obj, 'partial_rotary_factor')] as const,
  ]) {
    if (v !== undefined && v !== null && v !== 1) {
      r.fail(path, `${path} ${describeJson(v)} is not supported (the Llama family rotates the whole head)`);
    }
  }

  let scaling: RopeScaling = { type: 'default' };
  let from: string | null = null;
  for (const [key, o] of objs) {
    const type = ropeTypeOf(r, key, o) ?? 'default';
    for (const k of Object.keys(o)) {
      if (!ROPE_COMMON_KEYS.includes(k) && !ROPE_TYPE_KEYS[type].includes(k)) {
        r.fail(`${key}.${k}`, `${quoteName(`${key}.${k}`)} is not supported with rope type '${type}'`);
      }
    }
    let s: RopeScaling;
    if (type === 'default') s = { type };
    else {
      const factor = positive(r, o, 'factor', `${key}.factor`);
      if (factor === undefined) r.fail(`${key}.factor`, `rope type '${type}' needs '${key}.factor'`);
      if (type === 'linear') s = { type, factor };
      else {
        const need = (k: string): number => {
          const v = positive(r, o, k, `${key}.${k}`);
          if (v === undefined) r.fail(`${key}.${k}`, `rope type 'llama3' needs '${key}.${k}'`);
          return v;
        };
        const lowFreqFactor = need('low_freq_factor');
        const highFreqFactor = need('high_freq_factor');
        if (!(highFreqFactor > lowFreqFactor)) {
          r.fail(
            `${key}.high_freq_factor`,
            `'${key}.high_freq_factor' ${highFreqFactor} must exceed low_freq_factor ${lowFreqFactor}`,
          );
        }
        // HF: a top-level original_max_position_embeddings wins, else the dict's, else max_position_embeddings.
        const top = own(r.obj, 'original_max_position_embeddings');
        const omp =
          top !== undefined
            ? r.int('original_max_position_embeddings', LIMITS.max_position_embeddings)
            : (positive(
                r,
                o,
                'original_max_position_embeddings',
                `${key}.original_max_position_embeddings`,
              ) ?? maxPos);
        if (!Number.isInteger(omp)) {
          r.fail(
            `${key}.original_max_position_embeddings`,
            `'original_max_position_embeddings' must be an integer`,
          );
        }
        s = { type, factor, lowFreqFactor, highFreqFactor, originalMaxPositionEmbeddings: omp };
      }
    }
    if (from !== null && JSON.stringify(s) !== JSON.stringify(scaling)) {
      r.fail(key, `'${key}' disagrees with '${from}' (two different RoPE scalings)`);
    }
    scaling = s;
    from = key;
  }
  return { scaling, theta };
}

/** Per layer: the sliding window or null (docs/FAMILIES.md, "Sliding window"). */
function slidingWindows(r: Reader, flavour: LlamaFlavour, L: number): (number | null)[] {
  const full = Array.from({ length: L }, () => null);
  const swRaw = own(r.obj, 'sliding_window');
  const window = (): number | null => {
    if (swRaw === undefined) return FLAVOUR_DEFAULTS[flavour].slidingWindow;
    if (swRaw === null) return null;
    return r.int('sliding_window', LIMITS.max_position_embeddings);
  };
  const lt = own(r.obj, 'layer_types');
  let types: string[] | null = null;
  if (lt !== undefined && lt !== null) {
    if (
      !Array.isArray(lt) ||
      lt.length !== L ||
      lt.some((t) => t !== 'full_attention' && t !== 'sliding_attention')
    ) {
      r.fail(
        'layer_types',
        `'layer_types' must list ${L} entries of 'full_attention' or 'sliding_attention'`,
      );
    }
    types = lt as string[];
  }
  if (flavour === 'llama') {
    // LlamaModel has no sliding window (HF ignores the key); layer types other than full would be another model.
    if (types?.some((t) => t !== 'full_attention')) {
      r.fail('layer_types', `'sliding_attention' layers are not part of model_type 'llama'`);
    }
    return full;
  }
  if (flavour === 'mistral') {
    // Mistral: one window for every layer when sliding_window is set.
    const w = window();
    const want = w === null ? 'full_attention' : 'sliding_attention';
    if (types?.some((t) => t !== want)) {
      r.fail(
        'layer_types',
        `'layer_types' disagrees with sliding_window ${w} (Mistral uses one kind for all layers)`,
      );
    }
    return full.map(() => w);
  }
  // Qwen2 / Qwen3: the window only with use_sliding_window, on layers i >= max_window_layers (or layer_types).
  const use = r.bool('use_sliding_window', false);
  const w = use ? window() : null;
  if (types === null) {
    if (w === null) return full;
    const mwl = r.count('max_window_layers', LIMITS.num_hidden_layers, DEFAULTS.max_window_layers);
    return full.map((_, i) => (i >= mwl ? w : null));
  }
  if (w === null && types.includes('sliding_attention')) {
    r.fail(
      'layer_types',
      `'layer_types' has 'sliding_attention' layers but no sliding window is set (use_sliding_window ${use}, sliding_window ${describeJson(swRaw ?? null)})`,
    );
  }
  return types.map((t) => (t === 'sliding_attention' ? w : null));
}

/** Validates a parsed config.json of model_type llama, qwen2, qwen3 or mistral. Throws ModelLoadError naming the key. */
export function parseLlamaConfig(json: Json, flavour: LlamaFlavour, file = 'config.json'): LlamaConfig {
  const r = new Reader(json, file);
  const fd = FLAVOUR_DEFAULTS[flavour];
  const vocabSize = r.int('vocab_size', LIMITS.vocab_size);
  const hiddenSize = r.int('hidden_size', LIMITS.hidden_size);
  const numLayers = r.int('num_hidden_layers', LIMITS.num_hidden_layers);
  const numHeads = r.int('num_attention_heads', LIMITS.num_attention_heads);
  const intermediateSize = r.int('intermediate_size', LIMITS.intermediate_size);
  const maxPositionEmbeddings = r.int(
    'max_position_embeddings',
    LIMITS.max_position_embeddings,
    fd.maxPositionEmbeddings,
  );
  // HF: absent -> the class default (Llama: H; Qwen2/Qwen3: 32; Mistral: 8); null -> H.
  const kvRaw = own(json, 'num_key_value_heads');
  const numKvHeads =
    kvRaw === undefined
      ? (fd.kvHeads ?? numHeads)
      : kvRaw === null
        ? numHeads
        : r.int('num_key_value_heads', LIMITS.num_attention_heads);
  if (numHeads % numKvHeads !== 0) {
    r.fail(
      'num_key_value_heads',
      `num_attention_heads ${numHeads} is not a multiple of num_key_value_heads ${numKvHeads}`,
    );
  }
  // HF: `getattr(config, "head_dim", None) or hidden_size // num_attention_heads` (Qwen3's class default: 128).
  const hdRaw = own(json, 'head_dim');
  let headDim = 0;
  if (hdRaw === undefined) headDim = fd.headDim ?? 0;
  else if (hdRaw === null && flavour === 'qwen3')
    // Qwen3Attention reads `getattr(config, "head_dim", d // H)`: a null is taken as given and the model cannot be
    // built there, so the explorer does not guess one either.
    r.fail(
      'head_dim',
      'head_dim is null: Qwen3 takes it as given (transformers cannot build such a model); give a number',
    );
  else if (hdRaw === null) headDim = 0;
  else headDim = r.int('head_dim', LIMITS.hidden_size);
  // LlamaConfig.validate_architecture: d must split over the heads even where head_dim is given.
  if (flavour === 'llama' && hiddenSize % numHeads !== 0) {
    r.fail(
      'num_attention_heads',
      `hidden_size ${hiddenSize} is not divisible by num_attention_heads ${numHeads}`,
    );
  }
  if (headDim === 0) {
    if (hiddenSize % numHeads !== 0) {
      r.fail(
        'num_attention_heads',
        `hidden_size ${hiddenSize} is not divisible by num_attention_heads ${numHeads}`,
      );
    }
    headDim = hiddenSize / numHeads;
  }
  if (headDim % 2 !== 0) r.fail('head_dim', `head_dim ${headDim} must be even (rotate-half RoPE)`);

  const act = r.str('hidden_act', 'silu');
  if (act !== 'silu') {
    r.fail(
      'hidden_act',
      `hidden_act ${quoteName(act ?? '')} is not supported (the Llama family's SwiGLU uses 'silu')`,
    );
  }
  const q = own(json, 'quantization_config');
  if (q !== undefined && q !== null) {
    r.fail('quantization_config', 'quantization_config is not supported (quantized weights)');
  }
  for (const k of ['add_cross_attention', 'is_encoder_decoder']) {
    if (own(json, k) === true) r.fail(k, `${k} is not supported (decoder-only causal LM)`);
  }
  const eps = r.num(json, 'rms_norm_eps', 'rms_norm_eps') ?? DEFAULTS.rms_norm_eps;
  if (!(eps > 0)) r.fail('rms_norm_eps', `'rms_norm_eps' must be > 0, found ${eps}`);
  const { scaling, theta } = ropeScaling(r, maxPositionEmbeddings);

  // The biases each flavour's HF module tree has (docs/FAMILIES.md, "Biases").
  const attnBiasKey = flavour === 'llama' || flavour === 'qwen3' ? r.bool('attention_bias', false) : false;
  const attentionBias = flavour === 'qwen2' ? true : attnBiasKey;
  const oProjBias = attnBiasKey;
  const mlpBias = flavour === 'llama' ? r.bool('mlp_bias', false) : false;

  return {
    family: 'llama',
    flavour,
    vocabSize,
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    intermediateSize,
    rmsNormEps: eps,
    ropeTheta: theta,
    ropeScaling: scaling,
    rotaryDim: headDim,
    attentionBias,
    oProjBias,
    mlpBias,
    qkNorm: flavour === 'qwen3',
    slidingWindow: slidingWindows(r, flavour, numLayers),
    tieWordEmbeddings: r.bool('tie_word_embeddings', false),
    maxPositionEmbeddings,
  };
}

/** What a false flag of a LlamaConfig leaves out of a checkpoint, in config.json's words (llama-weights.ts refusals). */
export const LLAMA_FLAG_OFF: Partial<Record<ConfigFlag, (flavour: string) => string>> = {
  attentionBias: (f) =>
    `but ${f}'s q/k/v projections have no biases with this config.json (attention_bias false)`,
  oProjBias: (f) => `but ${f}'s o_proj has no bias with this config.json`,
  mlpBias: (f) => `but ${f}'s MLP has no biases with this config.json (mlp_bias false)`,
  qkNorm: (f) => `(q/k norms belong to model_type 'qwen3'; this config.json is '${f}')`,
};

/** A small LlamaConfig (odd sizes: d 40, 5 q heads over 1 KV head, ff 56, vocab 97) with any field overridden. */
export function smallLlamaConfig(over: Partial<LlamaConfig> = {}): LlamaConfig {
  const numLayers = over.numLayers ?? 2;
  return {
    family: 'llama',
    flavour: 'llama',
    vocabSize: 97,
    hiddenSize: 40,
    numLayers,
    numHeads: 5,
    numKvHeads: 1,
    headDim: 8,
    intermediateSize: 56,
    rmsNormEps: 1e-5,
    ropeTheta: 10000,
    ropeScaling: { type: 'default' },
    rotaryDim: over.headDim ?? 8,
    attentionBias: false,
    oProjBias: false,
    mlpBias: false,
    qkNorm: false,
    slidingWindow: Array.from({ length: numLayers }, () => null),
    tieWordEmbeddings: false,
    maxPositionEmbeddings: 256,
    ...over,
  };
}

/**
 * A fixed tiny config with every feature of the family: two layers, GQA 6/2 with hd 10, a window on layer 1, llama3
 * scaling, Qwen3's q/k norms with q/k/v biases, untied (the family's GPU self-test, compare/family-selftest.ts).
 */
export function everyFeatureLlamaConfig(): LlamaConfig {
  return smallLlamaConfig({
    flavour: 'qwen3',
    vocabSize: 43,
    hiddenSize: 28,
    numLayers: 2,
    numHeads: 6,
    numKvHeads: 2,
    headDim: 10,
    rotaryDim: 10,
    intermediateSize: 37,
    ropeTheta: 5e5,
    ropeScaling: {
      type: 'llama3',
      factor: 8,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositionEmbeddings: 16,
    },
    attentionBias: true,
    qkNorm: true,
    slidingWindow: [null, 3],
  });
}
