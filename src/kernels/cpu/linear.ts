// fp64 oracle: nn.Linear, y = x W^T + b.

/** x [M, K], weight [N, K] (PyTorch layout), bias [N] or null -> y [M, N]. */
export function linearF64(
  x: ArrayLike<number>,
  M: number,
  K: number,
  weight: ArrayLike<number>,
  bias: ArrayLike<number> | null,
  N: number,
): Float64Array {
  if (x.length < M * K) throw new Error(`linearF64: x has ${x.length} elements, need ${M}x${K}`);
  if (weight.length < N * K)
    throw new Error(`linearF64: weight has ${weight.length} elements, need ${N}x${K}`);
  if (bias && bias.length < N) throw new Error(`linearF64: bias has ${bias.length} elements, need ${N}`);
  // Copy the (few) input rows to doubles once: the inner loop then reads two typed arrays contiguously.
  const xs = x instanceof Float64Array ? x : Float64Array.from(x);
  const y = new Float64Array(M * N); // [M, N]
  // Weight-row outer: each weight row (K values) is read once and reused for all M rows of x (which stay in
  // cache); the LM head is ~100 MB. Rows of x go four at a time to share each weight load; every output is
  // still one sequential sum over k.
  for (let n = 0; n < N; n++) {
    const wo = n * K;
    const b = bias ? bias[n] : 0;
    let m = 0;
    for (; m + 4 <= M; m += 4) {
      const x0 = m * K;
      const x1 = x0 + K;
      const x2 = x1 + K;
      const x3 = x2 + K;
      let a0 = 0;
      let a1 = 0;
      let a2 = 0;
      let a3 = 0;
      for (let k = 0; k < K; k++) {
        const wk = weight[wo + k];
        a0 += xs[x0 + k] * wk;
        a1 += xs[x1 + k] * wk;
        a2 += xs[x2 + k] * wk;
        a3 += xs[x3 + k] * wk;
      }
      y[m * N + n] = bias ? a0 + b : a0;
      y[(m + 1) * N + n] = bias ? a1 + b : a1;
      y[(m + 2) * N + n] = bias ? a2 + b : a2;
      y[(m + 3) * N + n] = bias ? a3 + b : a3;
    }
    for (; m < M; m++) {
      const xo = m * K;
      let acc = 0;
      for (let k = 0; k < K; k++) acc += xs[xo + k] * weight[wo + k];
      y[m * N + n] = bias ? acc + b : acc;
    }
  }
  return y;
}
