// The fp64 oracle of a GPT-NeoX model under the names its engine and reports use: HF transformers'
// GPTNeoXForCausalLM forward (eval, no dropout, no cache), every op in float64 on fp32 weights. It is the op
// registry's forward (op-forward.ts: the family's steps, each by its fp64 form) with the engine's tap names, the
// join key with the GPU plans; kept as a name of its own for the many callers that want GPT-NeoX's dump and taps.

import type { HiddenDump, LayerWeights, ModelWeights, NeoXConfig } from '../../numeric/types';
import { opForward, opLayer } from './op-forward';
import type { RotaryAngles } from './rotary-angles';

export interface OracleOptions {
  /** Applied to every op's output: the storage rounding of a precision mode (identity = exact fp64). */
  round?: (v: Float64Array) => Float64Array;
  /** Rotary angles: 'exact' (default) or Hugging Face's fp32 ones (rotary-angles.ts; runs dumped from PyTorch). */
  angles?: RotaryAngles;
}

function checkHeads(cfg: NeoXConfig): void {
  const { numHeads: H, headDim: hd, hiddenSize: d } = cfg;
  if (H * hd !== d) throw new Error(`oracleForward: numHeads ${H} * headDim ${hd} !== hiddenSize ${d}`);
}

/**
 * The HF GPT-NeoX forward on `tokens` (positions 0..T-1). Returns the hidden-state dump: embeddings [T, d],
 * layers[i] = residual after layer i [T, d], finalNorm [T, d], logits [T, V]. When `taps` is given it receives
 * `embed`; per layer `layers.${i}.` + ln1, qkv, q, k, v (after rotary), scores (0 above the diagonal), probs,
 * ctx, attn_out, resid_mid (sequential residual only), ln2, fc1, gelu, mlp_out, out; then final_norm, logits.
 */
export function oracleForward(
  cfg: NeoXConfig,
  w: ModelWeights,
  tokens: number[],
  taps?: Map<string, Float64Array>,
  opts: OracleOptions = {},
): HiddenDump<Float64Array> {
  if (tokens.length === 0) throw new Error('oracleForward: empty token list');
  checkHeads(cfg);
  return opForward(cfg, w, tokens, taps, { ...opts, planNames: true });
}

/**
 * One GPTNeoXLayer on the residual stream x [T, d] (layer index i names the taps). Returns the new residual.
 * Used alone to measure local error (a layer on a given input).
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
  checkHeads(cfg);
  const x64 = x instanceof Float64Array ? x : Float64Array.from(x);
  // A layer reads no token ids (only the embedding does): T of them stand for the rows.
  const rows = new Array<number>(T).fill(0);
  return opLayer(cfg, lw, x64, rows, i, taps, { ...opts, planNames: true });
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
