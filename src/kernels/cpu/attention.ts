// fp64 oracle: causal scaled dot-product attention, split into scores, softmax and the value product.

/** q, k [H, T, hd] -> scores [H, T, T]: q_i . k_j / sqrt(hd) for j <= i, -Infinity for j > i. */
export function attentionScoresF64(
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  H: number,
  T: number,
  hd: number,
): Float64Array {
  const scale = 1 / Math.sqrt(hd);
  const out = new Float64Array(H * T * T); // [H, T, T]
  for (let h = 0; h < H; h++) {
    const base = h * T * hd;
    for (let i = 0; i < T; i++) {
      const qo = base + i * hd;
      const row = (h * T + i) * T;
      for (let j = 0; j < T; j++) {
        if (j > i) {
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

/** scores [H, T, T] -> probs [H, T, T]: max-subtracted softmax over j <= i of each row, 0 for j > i. */
export function softmaxCausalF64(scores: ArrayLike<number>, H: number, T: number): Float64Array {
  const out = new Float64Array(H * T * T); // [H, T, T]
  for (let r = 0; r < H * T; r++) {
    const i = r % T;
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
): Float64Array {
  const d = H * hd;
  const out = new Float64Array(T * d); // [T, H*hd]
  for (let h = 0; h < H; h++) {
    for (let i = 0; i < T; i++) {
      const row = (h * T + i) * T;
      const dst = i * d + h * hd;
      for (let e = 0; e < hd; e++) {
        let acc = 0;
        for (let j = 0; j <= i; j++) acc += probs[row + j] * v[(h * T + j) * hd + e];
        out[dst + e] = acc;
      }
    }
  }
  return out;
}
