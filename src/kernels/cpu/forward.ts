// The fp64 oracle of the whole model: HF transformers' GPTNeoXForCausalLM forward (eval, no dropout, no cache),
// every op in float64 on fp32 weights. Optional taps record per-op intermediates under stable names, the join
// key with the GPU plans.

import type { HiddenDump, LayerWeights, LinearWeights, ModelWeights, NeoXConfig } from '../../numeric/types';
import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from './attention';
import { embeddingF64 } from './embedding';
import { geluF64 } from './gelu';
import { layerNormF64 } from './layernorm';
import { linearF64 } from './linear';
import { add3F64, addF64 } from './residual';
import { splitHeadsRotaryF64 } from './rotary';
import type { RotaryAngles } from './rotary-angles';

function linear(x: Float64Array, M: number, K: number, w: LinearWeights, N: number): Float64Array {
  return linearF64(x, M, K, w.weight.data, w.bias ? w.bias.data : null, N);
}

/** Copy of scores [H, T, T] with the masked (-Infinity) entries above the diagonal written as 0. */
function finiteScores(scores: Float64Array, H: number, T: number): Float64Array {
  const out = new Float64Array(scores);
  for (let r = 0; r < H * T; r++) {
    const i = r % T;
    for (let j = i + 1; j < T; j++) out[r * T + j] = 0;
  }
  return out;
}

export interface OracleOptions {
  /** Applied to every op's output: the storage rounding of a precision mode (identity = exact fp64). */
  round?: (v: Float64Array) => Float64Array;
  /** Rotary angles: 'exact' (default) or Hugging Face's fp32 ones (rotary-angles.ts; runs dumped from PyTorch). */
  angles?: RotaryAngles;
}

/**
 * The HF GPT-NeoX forward on `tokens` (positions 0..T-1). Returns the hidden-state dump: embeddings [T, d],
 * layers[i] = residual after layer i [T, d], finalNorm [T, d], logits [T, V]. When `taps` is given it receives
 * `embed`; per layer `layers.${i}.` + ln1, qkv, q, k, v (after rotary), scores (0 above the diagonal), probs,
 * ctx, attn_out, ln2, fc1, gelu, mlp_out, resid_mid (sequential residual only), out; then final_norm, logits.
 */
export function oracleForward(
  cfg: NeoXConfig,
  w: ModelWeights,
  tokens: number[],
  taps?: Map<string, Float64Array>,
  opts: OracleOptions = {},
): HiddenDump<Float64Array> {
  const r = opts.round ?? ((v: Float64Array) => v);
  const T = tokens.length;
  const d = cfg.hiddenSize;
  const H = cfg.numHeads;
  const hd = cfg.headDim;
  const V = cfg.vocabSize;
  const eps = cfg.layerNormEps;
  if (T === 0) throw new Error('oracleForward: empty token list');
  if (H * hd !== d) throw new Error(`oracleForward: numHeads ${H} * headDim ${hd} !== hiddenSize ${d}`);
  if (w.layers.length !== cfg.numLayers) {
    throw new Error(`oracleForward: ${w.layers.length} layer weights for numLayers ${cfg.numLayers}`);
  }
  const tap = (name: string, value: Float64Array): void => {
    taps?.set(name, value);
  };

  const embeddings = r(embeddingF64(w.embedIn.data, d, tokens)); // [T, d]
  tap('embed', embeddings);

  const layers: Float64Array[] = [];
  let x = embeddings; // [T, d]
  for (let i = 0; i < cfg.numLayers; i++) {
    x = oracleLayer(cfg, w.layers[i], x, T, i, taps, opts);
    layers.push(x);
  }

  const finalNorm = r(layerNormF64(x, T, d, w.finalLayerNorm.weight.data, w.finalLayerNorm.bias.data, eps)); // [T, d]
  const logits = r(linearF64(finalNorm, T, d, w.lmHead.data, null, V)); // [T, V]
  tap('final_norm', finalNorm);
  tap('logits', logits);

  return { T, d, V, embeddings, layers, finalNorm, logits };
}

/**
 * One GPTNeoXLayer on the residual stream x [T, d] (layer index i names the taps). Returns the new residual.
 * Used by oracleForward, and alone to measure local error (a layer on a given input).
 */
export function oracleLayer(
  cfg: NeoXConfig,
  lw: LayerWeights,
  x: Float64Array | Float32Array,
  T: number,
  i: number,
  taps?: Map<string, Float64Array>,
  opts: OracleOptions = {},
): Float64Array {
  const r = opts.round ?? ((v: Float64Array) => v);
  const d = cfg.hiddenSize;
  const H = cfg.numHeads;
  const hd = cfg.headDim;
  const ff = cfg.intermediateSize;
  const eps = cfg.layerNormEps;
  const tap = (name: string, value: Float64Array): void => {
    taps?.set(name, value);
  };
  const p = `layers.${i}.`;

  // Attention: dense(attention(input_layernorm(x))).
  const ln1 = r(layerNormF64(x, T, d, lw.inputLayernorm.weight.data, lw.inputLayernorm.bias.data, eps)); // [T, d]
  const qkv = r(linear(ln1, T, d, lw.qkv, 3 * d)); // [T, 3d] = [T, H, 3, hd]
  const split = splitHeadsRotaryF64(qkv, T, H, hd, cfg.rotaryNdims, cfg.rotaryBase, opts.angles);
  const [q, k, v] = [r(split.q), r(split.k), r(split.v)]; // [H, T, hd]
  const scores = r(attentionScoresF64(q, k, H, T, hd)); // [H, T, T]
  const probs = r(softmaxCausalF64(scores, H, T)); // [H, T, T]
  const ctx = r(attentionValuesF64(probs, v, H, T, hd)); // [T, d]
  const attnOut = r(linear(ctx, T, d, lw.dense, d)); // [T, d]
  tap(p + 'ln1', ln1);
  tap(p + 'qkv', qkv);
  tap(p + 'q', q);
  tap(p + 'k', k);
  tap(p + 'v', v);
  if (taps) tap(p + 'scores', finiteScores(scores, H, T));
  tap(p + 'probs', probs);
  tap(p + 'ctx', ctx);
  tap(p + 'attn_out', attnOut);

  // MLP: dense_4h_to_h(gelu(dense_h_to_4h(post_attention_layernorm(.)))), on x (parallel) or attn + x.
  const residMid = cfg.useParallelResidual ? null : r(addF64(attnOut, x)); // [T, d]
  const mlpIn = residMid ?? x;
  const ln2 = r(
    layerNormF64(
      mlpIn,
      T,
      d,
      lw.postAttentionLayernorm.weight.data,
      lw.postAttentionLayernorm.bias.data,
      eps,
    ),
  ); // [T, d]
  const fc1 = r(linear(ln2, T, d, lw.fc1, ff)); // [T, ff]
  const act = r(geluF64(fc1)); // [T, ff]
  const mlpOut = r(linear(act, T, ff, lw.fc2, d)); // [T, d]
  // HF: parallel `mlp_output + attn_output + hidden_states`; sequential `mlp_output + attn_output` where
  // attn_output already holds attn + x.
  const out = r(residMid ? addF64(mlpOut, residMid) : add3F64(x, attnOut, mlpOut)); // [T, d]
  tap(p + 'ln2', ln2);
  tap(p + 'fc1', fc1);
  tap(p + 'gelu', act);
  tap(p + 'mlp_out', mlpOut);
  if (residMid) tap(p + 'resid_mid', residMid);
  tap(p + 'out', out);

  return out;
}

/** Index of the largest value in row `row` of a [rows, n] array; the lowest index wins ties. */
export function argmaxRow(a: ArrayLike<number>, row: number, n: number): number {
  const off = row * n;
  let best = 0;
  let bestVal = a[off];
  for (let j = 1; j < n; j++) {
    if (a[off + j] > bestVal) {
      bestVal = a[off + j];
      best = j;
    }
  }
  return best;
}

/** Greedy decoding: `n` new token ids after `prompt`, rerunning the full forward each step (no cache). */
export function oracleGreedy(cfg: NeoXConfig, w: ModelWeights, prompt: number[], n: number): number[] {
  const ids = prompt.slice();
  const out: number[] = [];
  for (let s = 0; s < n; s++) {
    const dump = oracleForward(cfg, w, ids);
    const next = argmaxRow(dump.logits, dump.T - 1, dump.V);
    ids.push(next);
    out.push(next);
  }
  return out;
}
