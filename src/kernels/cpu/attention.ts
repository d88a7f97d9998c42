// fp64 oracle: causal scaled dot-product attention, split into scores, softmax and the value product. The options
// are the ways attention is miswritten (the causes, src/compare/causes/); the defaults are the model.

export interface ScoresVariant {
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

/** q, k [H, T, hd] -> scores [H, T, T]: q_i . k_j / sqrt(hd) for j <= i, -Infinity for j > i. */
export function attentionScoresF64(
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  H: number,
  T: number,
  hd: number,
  variant: ScoresVariant = {},
): Float64Array {
  const scale = variant.scale ?? 1 / Math.sqrt(hd);
  const out = new Float64Array(H * T * T); // [H, T, T]
  for (let h = 0; h < H; h++) {
    const base = h * T * hd;
    for (let i = 0; i < T; i++) {
      const qo = base + i * hd;
      const row = (h * T + i) * T;
      for (let j = 0; j < T; j++) {
        if (j > lastKey(i, T, variant)) {
          out[row + j] = Number.NEGATIVE_INFINITY;
          continue;
        }
        const ko = base + j * hd;
        let acc = 0;
        for (let e = 0; e < hd; e++) acc += q[qo + e] * k[ko + e];
        out[row + j] = acc * scale;
      }
    }
  }
  return out;
}

/**
 * scores [H, T, T] -> probs [H, T, T]: max-subtracted softmax over the keys row i sees (j <= i; a variant's mask
 * through `variant`), 0 for the others.
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
    const row = r * T;
    let max = Number.NEGATIVE_INFINITY;
    for (let j = 0; j <= i; j++) if (scores[row + j] > max) max = scores[row + j];
    let sum = 0;
    for (let j = 0; j <= i; j++) {
      const e = Math.exp(scores[row + j] - max);
      out[row + j] = e;
      sum += e;
    }
    const inv = 1 / sum;
    for (let j = 0; j <= i; j++) out[row + j] *= inv;
  }
  return out;
}

/** probs [H, T, T], v [H, T, hd] -> ctx [T, H*hd] with column h*hd + e (HF's permute + reshape). */
export function attentionValuesF64(
  probs: ArrayLike<number>,
  v: ArrayLike<number>,
  H: number,
  T: number,
  hd: number,
  variant: ScoresVariant = {},
): Float64Array {
  const d = H * hd;
  const out = new Float64Array(T * d); // [T, H*hd]
  for (let h = 0; h < H; h++) {
    for (let i = 0; i < T; i++) {
      const row = (h * T + i) * T;
      const dst = i * d + h * hd;
      const last = lastKey(i, T, variant);
      for (let e = 0; e < hd; e++) {
        let acc = 0;
        for (let j = 0; j <= last; j++) acc += probs[row + j] * v[(h * T + j) * hd + e];
        out[dst + e] = acc;
      }
    }
  }
  return out;
}
