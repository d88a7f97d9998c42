// Hugging Face GPTNeoX config.json -> NeoXConfig, in both key styles (classic and transformers 5.x), with
// every option this engine does not implement refused by name.

import type { NeoXConfig } from '../numeric/types';
import { describeJson, ModelLoadError, quoteName } from './errors';
import { checkJsonDepth, stripBom } from './json-text';

export type Json = Record<string, unknown>;

/** Sanity bounds: far above any real GPT-NeoX, low enough that a hostile file fails cleanly. */
export const LIMITS = {
  vocab_size: 10_000_000,
  hidden_size: 65_536,
  num_hidden_layers: 1024,
  num_attention_heads: 65_536,
  intermediate_size: 1_048_576,
  max_position_embeddings: 16_777_216,
} as const;

/** HF GPTNeoXConfig defaults. */
const DEFAULTS = {
  rotary_pct: 0.25,
  rotary_emb_base: 10000,
  layer_norm_eps: 1e-5,
  use_parallel_residual: true,
  attention_bias: true,
  tie_word_embeddings: false,
  hidden_act: 'gelu',
  max_position_embeddings: 2048,
} as const;

/** Keys a default-type rope_parameters / rope_scaling object may hold. */
const ROPE_KEYS = new Set(['rope_type', 'type', 'rope_theta', 'partial_rotary_factor']);

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function own(obj: Json, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

export class Reader {
  constructor(
    readonly obj: Json,
    readonly file: string,
  ) {}

  fail(key: string, detail: string): never {
    throw new ModelLoadError(this.file, detail, key);
  }

  int(key: string, max: number, fallback?: number): number {
    const v = own(this.obj, key);
    if (v === undefined) {
      if (fallback === undefined) this.fail(key, `missing required key '${key}'`);
      return fallback;
    }
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
      this.fail(key, `'${key}' must be a positive integer, found ${describeJson(v)}`);
    }
    if (v > max) this.fail(key, `'${key}' = ${v} exceeds the sanity limit ${max}`);
    return v;
  }

  /** A non-negative integer (0 allowed), or the fallback when absent. */
  count(key: string, max: number, fallback: number): number {
    const v = own(this.obj, key);
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
      this.fail(key, `'${key}' must be a non-negative integer, found ${describeJson(v)}`);
    }
    if (v > max) this.fail(key, `'${key}' = ${v} exceeds the sanity limit ${max}`);
    return v;
  }

  bool(key: string, fallback: boolean): boolean {
    const v = own(this.obj, key);
    if (v === undefined) return fallback;
    if (typeof v !== 'boolean') this.fail(key, `'${key}' must be true or false, found ${describeJson(v)}`);
    return v;
  }

  str(key: string, fallback?: string): string | undefined {
    const v = own(this.obj, key);
    if (v === undefined) return fallback;
    if (typeof v !== 'string') this.fail(key, `'${key}' must be a string, found ${describeJson(v)}`);
    return v;
  }

  /** A finite number at `path` (for messages) read from `obj`, or undefined when absent. */
  num(obj: Json, key: string, path: string): number | undefined {
    const v = own(obj, key);
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      this.fail(path, `'${path}' must be a finite number, found ${describeJson(v)}`);
    }
    return v;
  }
}

/** A rope_parameters / rope_scaling object: null/absent, or default-type rotary with theta and fraction only. */
function ropeObject(r: Reader, key: 'rope_parameters' | 'rope_scaling'): Json | undefined {
  const v = own(r.obj, key);
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) r.fail(key, `'${key}' must be an object or null, found ${describeJson(v)}`);
  for (const typeKey of ['rope_type', 'type']) {
    const t = own(v, typeKey);
    if (t === undefined) continue;
    if (typeof t !== 'string') {
      r.fail(`${key}.${typeKey}`, `'${key}.${typeKey}' must be a string, found ${describeJson(t)}`);
    }
    if (t !== 'default') {
      r.fail(
        `${key}.${typeKey}`,
        `${key}.${typeKey} ${quoteName(t)} is not supported (only default rotary embeddings, no RoPE scaling)`,
      );
    }
  }
  for (const k of Object.keys(v)) {
    if (!ROPE_KEYS.has(k)) {
      r.fail(
        `${key}.${k}`,
        `${quoteName(`${key}.${k}`)} is not supported (only default rotary embeddings, no RoPE scaling)`,
      );
    }
  }
  return v;
}

/** The one value of a setting that several keys may carry; all present ones must agree. */
export function agree(
  r: Reader,
  found: [string, number | undefined][],
  fallbackKey: string,
  fallback: number,
): [number, string] {
  let first: [string, number] | undefined;
  for (const [path, v] of found) {
    if (v === undefined) continue;
    if (first === undefined) first = [path, v];
    else if (v !== first[1]) {
      r.fail(path, `'${path}' = ${v} disagrees with '${first[0]}' = ${first[1]}`);
    }
  }
  return first === undefined ? [fallback, fallbackKey] : [first[1], first[0]];
}

/** Options that HF configs may carry and that this engine does not implement: refused by name. */
function refuseUnsupported(r: Reader, numHeads: number, headDim: number): void {
  const o = r.obj;
  const modelType = r.str('model_type');
  if (modelType !== undefined && modelType !== 'gpt_neox') {
    r.fail('model_type', `model_type ${quoteName(modelType)} is not supported (only 'gpt_neox')`);
  }
  const act = r.str('hidden_act', DEFAULTS.hidden_act);
  if (act !== 'gelu')
    r.fail('hidden_act', `hidden_act ${quoteName(act ?? '')} is not supported (only exact 'gelu')`);
  const sw = own(o, 'sliding_window');
  if (sw !== undefined && sw !== null) {
    r.fail(
      'sliding_window',
      `sliding_window (${describeJson(sw)}) is not supported (full causal attention only)`,
    );
  }
  if (own(o, 'use_sliding_window') === true) {
    r.fail('use_sliding_window', 'use_sliding_window is not supported (full causal attention only)');
  }
  const lt = own(o, 'layer_types');
  if (lt !== undefined && lt !== null) {
    if (!Array.isArray(lt) || lt.some((t) => t !== 'full_attention')) {
      r.fail('layer_types', `layer_types other than 'full_attention' are not supported`);
    }
  }
  const kv = own(o, 'num_key_value_heads');
  if (kv !== undefined && kv !== null && kv !== numHeads) {
    r.fail(
      'num_key_value_heads',
      `num_key_value_heads ${describeJson(kv)} is not supported (grouped-query attention; need ${numHeads})`,
    );
  }
  const hd = own(o, 'head_dim');
  if (hd !== undefined && hd !== null && hd !== headDim) {
    r.fail(
      'head_dim',
      `head_dim ${describeJson(hd)} is not supported (must equal hidden_size / heads = ${headDim})`,
    );
  }
  const q = own(o, 'quantization_config');
  if (q !== undefined && q !== null) {
    r.fail('quantization_config', 'quantization_config is not supported (quantized weights)');
  }
  for (const k of ['add_cross_attention', 'is_encoder_decoder']) {
    if (own(o, k) === true) r.fail(k, `${k} is not supported (decoder-only GPT-NeoX)`);
  }
}

/** Validates a parsed Hugging Face GPTNeoX config.json. Throws ModelLoadError naming the key at fault. */
export function parseConfig(json: unknown, file = 'config.json'): NeoXConfig {
  if (!isObject(json)) throw new ModelLoadError(file, `expected a JSON object, found ${describeJson(json)}`);
  const r = new Reader(json, file);

  const vocabSize = r.int('vocab_size', LIMITS.vocab_size);
  const hiddenSize = r.int('hidden_size', LIMITS.hidden_size);
  const numLayers = r.int('num_hidden_layers', LIMITS.num_hidden_layers);
  const numHeads = r.int('num_attention_heads', LIMITS.num_attention_heads);
  const intermediateSize = r.int('intermediate_size', LIMITS.intermediate_size);
  const maxPositionEmbeddings = r.int(
    'max_position_embeddings',
    LIMITS.max_position_embeddings,
    DEFAULTS.max_position_embeddings,
  );
  if (hiddenSize % numHeads !== 0) {
    r.fail(
      'num_attention_heads',
      `hidden_size ${hiddenSize} is not divisible by num_attention_heads ${numHeads}`,
    );
  }
  const headDim = hiddenSize / numHeads;

  refuseUnsupported(r, numHeads, headDim);

  // Rotary: transformers 5.x reads rope_parameters (or a legacy rope_scaling) first, then the classic keys.
  const params = ropeObject(r, 'rope_parameters');
  const scaling = ropeObject(r, 'rope_scaling');
  const [rotaryBase, baseKey] = agree(
    r,
    [
      ['rope_parameters.rope_theta', params && r.num(params, 'rope_theta', 'rope_parameters.rope_theta')],
      ['rope_scaling.rope_theta', scaling && r.num(scaling, 'rope_theta', 'rope_scaling.rope_theta')],
      ['rope_theta', r.num(json, 'rope_theta', 'rope_theta')],
      ['rotary_emb_base', r.num(json, 'rotary_emb_base', 'rotary_emb_base')],
    ],
    'rotary_emb_base',
    DEFAULTS.rotary_emb_base,
  );
  const [rotaryPct, pctKey] = agree(
    r,
    [
      [
        'rope_parameters.partial_rotary_factor',
        params && r.num(params, 'partial_rotary_factor', 'rope_parameters.partial_rotary_factor'),
      ],
      [
        'rope_scaling.partial_rotary_factor',
        scaling && r.num(scaling, 'partial_rotary_factor', 'rope_scaling.partial_rotary_factor'),
      ],
      ['partial_rotary_factor', r.num(json, 'partial_rotary_factor', 'partial_rotary_factor')],
      ['rotary_pct', r.num(json, 'rotary_pct', 'rotary_pct')],
    ],
    'rotary_pct',
    DEFAULTS.rotary_pct,
  );
  if (!(rotaryBase > 0)) r.fail(baseKey, `'${baseKey}' (rotary base) must be > 0, found ${rotaryBase}`);
  if (!(rotaryPct >= 0 && rotaryPct <= 1)) {
    r.fail(pctKey, `'${pctKey}' (rotary fraction) must be in [0, 1], found ${rotaryPct}`);
  }
  const rotaryNdims = Math.floor(headDim * rotaryPct);
  if (rotaryNdims % 2 !== 0 || rotaryNdims > headDim) {
    r.fail(
      pctKey,
      `rotary dims floor(head_dim ${headDim} * ${pctKey} ${rotaryPct}) = ${rotaryNdims} must be even and <= ${headDim}`,
    );
  }

  const eps = r.num(json, 'layer_norm_eps', 'layer_norm_eps') ?? DEFAULTS.layer_norm_eps;
  if (!(eps > 0)) r.fail('layer_norm_eps', `'layer_norm_eps' must be > 0, found ${eps}`);

  return {
    vocabSize,
    hiddenSize,
    numLayers,
    numHeads,
    headDim,
    intermediateSize,
    rotaryNdims,
    rotaryBase,
    layerNormEps: eps,
    useParallelResidual: r.bool('use_parallel_residual', DEFAULTS.use_parallel_residual),
    maxPositionEmbeddings,
    attentionBias: r.bool('attention_bias', DEFAULTS.attention_bias),
    tieWordEmbeddings: r.bool('tie_word_embeddings', DEFAULTS.tie_word_embeddings),
  };
}

/** HF config.json files nest a few levels (task_specific_params, rope_scaling); far deeper is not a config. */
export const CONFIG_MAX_DEPTH = 32;

/** Parses config.json text; malformed JSON becomes a ModelLoadError. */
export function parseConfigText(text: string, file = 'config.json'): NeoXConfig {
  const body = stripBom(text); // editors on Windows write one; JSON.parse refuses it
  checkJsonDepth(body, CONFIG_MAX_DEPTH, file);
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (e) {
    throw new ModelLoadError(file, `not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  return parseConfig(json, file);
}
