// fp64 oracle: LayerNorm over the last dim (torch.nn.LayerNorm: biased variance, eps inside the sqrt).

/** x [rows, d] -> [rows, d]: (x - mean) / sqrt(var + eps) * weight + bias, var = mean((x - mean)^2). */
export function layerNormF64(
  x: ArrayLike<number>,
  rows: number,
  d: number,
  weight: ArrayLike<number>,
  bias: ArrayLike<number>,
  eps: number,
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
    const inv = 1 / Math.sqrt(sq / d + eps);
    for (let e = 0; e < d; e++) out[off + e] = (x[off + e] - mean) * inv * weight[e] + bias[e];
  }
  return out;
}
