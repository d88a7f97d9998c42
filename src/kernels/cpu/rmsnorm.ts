// fp64 oracle: RMSNorm over the last dim (HF LlamaRMSNorm: y = x / sqrt(mean(x²) + eps) · w). HF computes the
// variance in fp32 of the input cast to fp32, normalises, casts back to the input dtype and then multiplies by the
// weight; in fp64 every cast is the identity, so the order drops out here. The same function is Qwen3's per-head
// q/k norm (rows = T · heads, d = head_dim). The options are the ways an RMSNorm is miswritten (the causes,
// src/compare/causes/); the defaults are the model.

export interface RmsNormVariant {
  /** x / (sqrt(mean(x²)) + eps) instead of / sqrt(mean(x²) + eps). */
  epsOutside?: boolean;
  /** Subtract the row mean first (a LayerNorm without bias): (x - mean) / sqrt(var + eps) · w. */
  centered?: boolean;
  /** Leave out the weight. */
  noWeight?: boolean;
}

/** x [rows, d] -> [rows, d]: x / sqrt(mean(x²) + eps) · weight. */
export function rmsNormF64(
  x: ArrayLike<number>,
  rows: number,
  d: number,
  weight: ArrayLike<number>,
  eps: number,
  v: RmsNormVariant = {},
): Float64Array {
  if (x.length < rows * d)
    throw new Error(`rmsNormF64: x has ${x.length} values, [${rows}, ${d}] needs ${rows * d}`);
  if (!v.noWeight && weight.length < d)
    throw new Error(`rmsNormF64: weight has ${weight.length} values, needs ${d}`);
  const out = new Float64Array(rows * d); // [rows, d]
  for (let r = 0; r < rows; r++) {
    const off = r * d;
    let mean = 0;
    if (v.centered) {
      for (let e = 0; e < d; e++) mean += x[off + e];
      mean /= d;
    }
    let sq = 0;
    for (let e = 0; e < d; e++) {
      const c = x[off + e] - mean;
      sq += c * c;
    }
    const ms = sq / d;
    const inv = v.epsOutside ? 1 / (Math.sqrt(ms) + eps) : 1 / Math.sqrt(ms + eps);
    for (let e = 0; e < d; e++) out[off + e] = (x[off + e] - mean) * inv * (v.noWeight ? 1 : weight[e]);
  }
  return out;
}
