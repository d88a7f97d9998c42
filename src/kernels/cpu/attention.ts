// fp64 oracle: causal scaled dot-product attention, split into scores, softmax and the value product. The options
// are the model's shape where it is not GPT-NeoX's (grouped-query attention, a sliding window: the Llama family) and
// the ways attention is miswritten (the causes, src/compare/causes/); the defaults are GPT-NeoX's model.
//
// Grouped-query attention (HF `repeat_kv`): k and v have kvHeads heads; KV head j serves the contiguous block of
// query heads j·g … j·g + g - 1, g = H / kvHeads, so query head h reads KV head floor(h / g) (MQA: kvHeads = 1).
// Sliding window (transformers 5 `masking_utils.py`: `sliding_window_overlay` is kv_idx > q_idx - sliding_window,
// and-ed with the causal kv_idx <= q_idx): key j is visible to query i iff j <= i and i - j < window.

export interface ScoresVariant {
  /** The number of KV heads (k and v are [kvHeads, T, hd]); absent: H (multi-head attention). */
  kvHeads?: number;
  /** Row i sees keys j with i - j < window too (Mistral's sliding_window); absent or null: no window. */
  window?: number | null;
  /** The KV head each query head reads ([H]), a miswired mapping (a cause); absent: floor(h / (H / kvHeads)). */
  kvMap?: ArrayLike<number>;
  /** The factor on q·k instead of 1 / sqrt(hd). */
  scale?: number;
  /** Row i sees keys j <= i + causalOffset (0: the model; null: no mask at all). */
  causalOffset?: number | null;
}

/** The last key row i sees under the variant's mask. */
export function lastKey(i: number, T: number, v: ScoresVariant = {}): number {
  if (v.causalOffset === null) return T - 1;
  return Math.max(-1, Math.min(T - 1, i + (v.causalOffset ?? 0)));
}

/** The first key row i sees: i - window + 1 under a sliding window (not below 0), else 0. */
export function firstKey(i: number, v: ScoresVariant = {}): number {
  if (v.causalOffset === null || v.window === undefined || v.window === null) return 0;
  return Math.max(0, i - v.window + 1);
}

/** The KV head of each query head ([H]): the variant's map, or HF's repeat_kv, floor(h / (H / kvHeads)). */
export function kvHeadMap(H: number, v: ScoresVariant = {}): Int32Array {
  const kvHeads = v.kvHeads ?? H;
  if (!(kvHeads >= 1) || H % kvHeads !== 0)
    throw new Error(
      `attention: ${H} query heads cannot be grouped over ${kvHeads} KV heads (H % kvHeads must be 0)`,
    );
  if (v.window !== undefined && v.window !== null && !(Number.isInteger(v.window) && v.window >= 1))
    throw new Error(`attention: sliding window ${v.window} must be a positive integer`);
  const group = H / kvHeads;
  const out = new Int32Array(H);
  for (let h = 0; h < H; h++) {
    out[h] = v.kvMap ? v.kvMap[h] : Math.floor(h / group);
    if (!(out[h] >= 0 && out[h] < kvHeads))
      throw new Error(`attention: query head ${h} maps to KV head ${out[h]}`);
  }
  return out;
}

/**
 * q [H, T, hd], k [kvHeads, T, hd] -> scores [H, T, T]: q_i . k_j / sqrt(hd) for the keys row i sees
 * (firstKey <= j <= lastKey), -Infinity for the others; query head h reads KV head kvHeadMap(h).
 */
export function attentionScoresF64(
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  H: number,
  T: number,
  hd: number,
  variant: ScoresVariant = {},
): Float64Array {
  const scale = variant.scale ?? 1 / Math.sqrt(hd);
  const kvOf = kvHeadMap(H, variant);
  const out = new Float64Array(H * T * T); // [H, T, T]
  for (let h = 0; h < H; h++) {
    const base = h * T * hd;
    const kBase = kvOf[h] * T * hd;
    for (let i = 0; i < T; i++) {
      const qo = base + i * hd;
      const row = (h * T + i) * T;
      const first = firstKey(i, variant);
      for (let j = 0; j < T; j++) {
        if (j > lastKey(i, T, variant) || j < first) {
          out[row + j] = Number.NEGATIVE_INFINITY;
          continue;
        }
        const ko = kBase + j * hd;
        let acc = 0;
        for (let e = 0; e < hd; e++) acc += q[qo + e] * k[ko + e];
        out[row + j] = acc * scale;
      }
    }
  }
  return out;
}

/**
 * scores [H, T, T] -> probs [H, T, T]: max-subtracted softmax over the keys row i sees (firstKey <= j <= i; a
 * variant's mask through `variant`), 0 for the others.
 */
export function softmaxCausalF64(
  scores: ArrayLike<number>,
  H: number,
  T: number,
  variant: ScoresVariant = {},
): Float64Array {
  const out = new Float64Array(H * T * T); // [H, T, T]
  for (let r = 0; r < H * T; r++) {
    const i = lastKey(r % T, T, variant);
    const first = firstKey(r % T, variant);
    const row = r * T;
    let max = Number.NEGATIVE_INFINITY;
    for (let j = first; j <= i; j++) if (scores[row + j] > max) max = scores[row + j];
    let sum = 0;
    for (let j = first; j <= i; j++) {
      const e = Math.exp(scores[row + j] - max);
      out[row + j] = e;
      sum += e;
    }
    const inv = 1 / sum;
    for (let j = first; j <= i; j++) out[row + j] *= inv;
  }
  return out;
}

/**
 * probs [H, T, T], v [kvHeads, T, hd] -> ctx [T, H*hd] with column h*hd + e (HF's permute + reshape); query head h
 * reads KV head kvHeadMap(h).
 */
export function attentionValuesF64(
  probs: ArrayLike<number>,
  v: ArrayLike<number>,
  H: number,
  T: number,
  hd: number,
  variant: ScoresVariant = {},
): Float64Array {
  const d = H * hd;
  const kvOf = kvHeadMap(H, variant);
  const out = new Float64Array(T * d); // [T, H*hd]
  for (let h = 0; h < H; h++) {
    const kv = kvOf[h];
    for (let i = 0; i < T; i++) {
      const row = (h * T + i) * T;
      const dst = i * d + h * hd;
      const last = lastKey(i, T, variant);
      const first = firstKey(i, variant);
      for (let e = 0; e < hd; e++) {
        let acc = 0;
        for (let j = first; j <= last; j++) acc += probs[row + j] * v[(kv * T + j) * hd + e];
        out[dst + e] = acc;
      }
    }
  }
  return out;
}
