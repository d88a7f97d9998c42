// fp64 oracle: LayerNorm over the last dim (torch.nn.LayerNorm: biased variance, eps inside the sqrt). The
// options are the ways a LayerNorm is miswritten (the causes, src/compare/causes/): the defaults are the model.

export interface LayerNormVariant {
  /** Divide the squared deviations by d - 1 instead of d. */
  unbiased?: boolean;
  /** (x - mean) / (sqrt(var) + eps) instead of / sqrt(var + eps). */
  epsOutside?: boolean;
  /** Leave out the weight (gamma) or the bias (beta). */
  noWeight?: boolean;
  noBias?: boolean;
}

/** x [rows, d] -> [rows, d]: (x - mean) / sqrt(var + eps) * weight + bias, var = mean((x - mean)^2). */
export function layerNormF64(
  x: ArrayLike<number>,
  rows: number,
  d: number,
  weight: ArrayLike<number>,
  bias: ArrayLike<number>,
  eps: number,
  v: LayerNormVariant = {},
): Float64Array {
  const out = new Float64Array(rows * d); // [rows, d]
  for (let r = 0; r < rows; r++) {
    const off = r * d;
    let sum = 0;
    for (let e = 0; e < d; e++) sum += x[off + e];
    const mean = sum / d;
    let sq = 0;
    for (let e = 0; e < d; e++) {
      const c = x[off + e] - mean;
      sq += c * c;
    }
    const variance = sq / (v.unbiased ? d - 1 : d);
    const inv = v.epsOutside ? 1 / (Math.sqrt(variance) + eps) : 1 / Math.sqrt(variance + eps);
    for (let e = 0; e < d; e++)
      out[off + e] = (x[off + e] - mean) * inv * (v.noWeight ? 1 : weight[e]) + (v.noBias ? 0 : bias[e]);
  }
  return out;
}
