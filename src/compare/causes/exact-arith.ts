// The arithmetic of the exact op's variants: GELU's replacements, an fp16 accumulator as a kernel emulates it, and
// the fp64 dot product every product is built on.
import { gelu } from '../../kernels/cpu/gelu';
import { roundF32ToF16, roundTo } from '../../numeric/round';
import type { ActFn } from './types';

export function actOf(fn: ActFn): (x: number) => number {
  switch (fn) {
    case 'gelu':
      return gelu;
    case 'gelu-tanh':
      return (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
    case 'gelu-sigmoid':
      return (x) => x / (1 + Math.exp(-1.702 * x));
    case 'relu':
      return (x) => (x > 0 ? x : 0);
    case 'silu':
      return (x) => x / (1 + Math.exp(-x));
  }
}

/** One output of a product with an fp16 accumulator, as the GEMM core emulates it (see Variant.acc). */
export function accumulateF16(
  x: Float64Array,
  xo: number,
  w: Float64Array,
  K: number,
  chunk: number,
  fused: boolean,
  half = false,
) {
  const f = Math.fround;
  let total = 0;
  for (let k0 = 0; k0 < K; k0 += chunk) {
    let s = 0;
    const k1 = Math.min(K, k0 + chunk);
    if (half) for (let k = k0; k < k1; k++) s = roundTo('fp16', s + x[xo + k] * w[k]);
    else if (fused) for (let k = k0; k < k1; k++) s = roundF32ToF16(s + x[xo + k] * w[k]);
    else for (let k = k0; k < k1; k++) s = roundF32ToF16(s + f(x[xo + k] * w[k]));
    total = k0 === 0 ? s : roundF32ToF16(total + s);
  }
  return total;
}

/** sum_k x[xo + k] w[k] in fp64 (four running sums: exact to a few fp64 roundings, far below any f32 floor). */
export function dot(x: Float64Array, xo: number, w: Float64Array, K: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let k = 0;
  for (; k + 3 < K; k += 4) {
    s0 += x[xo + k] * w[k];
    s1 += x[xo + k + 1] * w[k + 1];
    s2 += x[xo + k + 2] * w[k + 2];
    s3 += x[xo + k + 3] * w[k + 3];
  }
  for (; k < K; k++) s0 += x[xo + k] * w[k];
  return s0 + s1 + (s2 + s3);
}
