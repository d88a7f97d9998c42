// fp64 oracle: nn.Linear, y = x W^T + b — the one fp64 linear. The oracles call it plain; the causes' variants of a
// product (compare/causes/exact-op.ts) call it with LinearParams: the columns asked for, the weight row and the bias
// as the variant reads them, an fp16 accumulator as a kernel emulates it.
import { roundF32ToF16, roundTo } from '../../numeric/round';

/** A miswritten product, as parameters (compare/causes/types.ts Variant names where each comes from). */
export interface LinearParams {
  /** The output columns computed, in this order (all when null): y is then [M, cols.length]. */
  cols: Int32Array | null;
  /** Weight row n (of N) into w[0, K), as the variant reads it (rounded, transposed). */
  row: (n: number, N: number, w: Float64Array) => void;
  /** Column n's bias as the variant reads it (scaled, rounded; 0 without one). */
  bias: (n: number) => number;
  /** An fp16 accumulator (see Variant.acc): the output is then that sum plus the bias, rounded to f32. */
  acc?: { chunk: number; fused: boolean; half?: boolean };
}

/**
 * x [M, K], weight [N, K] (PyTorch layout), bias [N] or null -> y [M, N]. With `p`, weight and bias are read through
 * p.row and p.bias and y is [M, p.cols.length]. Every output is exact to a few fp64 roundings, far below any f32
 * floor; the plain product sums each output in one sequential chain (as the oracles always have), a variant's in
 * four running sums (as the causes always have: their ratios stay what they were).
 */
export function linearF64(
  x: ArrayLike<number>,
  M: number,
  K: number,
  weight: ArrayLike<number>,
  bias: ArrayLike<number> | null,
  N: number,
  p?: LinearParams,
): Float64Array {
  if (p) return linearVariant(x instanceof Float64Array ? x : Float64Array.from(x), M, K, N, p);
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

function linearVariant(x: Float64Array, M: number, K: number, N: number, p: LinearParams): Float64Array {
  const picked = p.cols ?? Int32Array.from({ length: N }, (_, i) => i);
  const out = new Float64Array(M * picked.length);
  const w = new Float64Array(K);
  const acc = p.acc;
  for (let j = 0; j < picked.length; j++) {
    const n = picked[j];
    p.row(n, N, w);
    const bn = p.bias(n);
    let t = 0;
    if (acc && !acc.half)
      // (four rows at once: each running sum is a chain of roundings, four chains side by side keep the core busy)
      for (; t + 4 <= M; t += 4) {
        accumulateF16Rows4(x, t * K, w, K, acc.chunk, acc.fused, four);
        for (let i = 0; i < 4; i++) out[(t + i) * picked.length + j] = Math.fround(four[i] + bn);
      }
    for (; t < M; t++) {
      const xo = t * K;
      out[t * picked.length + j] = acc
        ? Math.fround(accumulateF16(x, xo, w, K, acc.chunk, acc.fused, acc.half) + bn)
        : dot(x, xo, w, K) + bn;
    }
  }
  return out;
}

const four = new Float64Array(4);
const fa = new Float32Array(1);
const ua = new Uint32Array(fa.buffer);
const fb = new Float32Array(1);
const ub = new Uint32Array(fb.buffer);
const fc = new Float32Array(1);
const uc = new Uint32Array(fc.buffer);
const fd = new Float32Array(1);
const ud = new Uint32Array(fd.buffer);

/** roundF32ToF16 (numeric/round.ts) on a scratch value of its own: four of them run side by side. */
function r16(f: Float32Array, u: Uint32Array, x: number): number {
  f[0] = x;
  const b = u[0];
  const exp = (b >>> 23) & 0xff;
  if (exp < 113 || exp > 142) return roundTo('fp16', f[0]);
  u[0] = (b + 0x0fff + ((b >>> 13) & 1)) & ~0x1fff;
  const r = f[0];
  return Math.abs(r) > 65504 ? roundTo('fp16', x) : r;
}

/** accumulateF16 (not `half`) of the four rows at xo, xo + K, xo + 2K, xo + 3K into out[0..3]: the same steps. */
function accumulateF16Rows4(
  x: Float64Array,
  xo: number,
  w: Float64Array,
  K: number,
  chunk: number,
  fused: boolean,
  out: Float64Array,
): void {
  const f = Math.fround;
  const [a, b, c, d] = [xo, xo + K, xo + 2 * K, xo + 3 * K];
  let t0 = 0;
  let t1 = 0;
  let t2 = 0;
  let t3 = 0;
  for (let k0 = 0; k0 < K; k0 += chunk) {
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    const k1 = Math.min(K, k0 + chunk);
    if (fused)
      for (let k = k0; k < k1; k++) {
        const wk = w[k];
        s0 = r16(fa, ua, s0 + x[a + k] * wk);
        s1 = r16(fb, ub, s1 + x[b + k] * wk);
        s2 = r16(fc, uc, s2 + x[c + k] * wk);
        s3 = r16(fd, ud, s3 + x[d + k] * wk);
      }
    else
      for (let k = k0; k < k1; k++) {
        const wk = w[k];
        s0 = r16(fa, ua, s0 + f(x[a + k] * wk));
        s1 = r16(fb, ub, s1 + f(x[b + k] * wk));
        s2 = r16(fc, uc, s2 + f(x[c + k] * wk));
        s3 = r16(fd, ud, s3 + f(x[d + k] * wk));
      }
    if (k0 === 0) {
      t0 = s0;
      t1 = s1;
      t2 = s2;
      t3 = s3;
    } else {
      t0 = r16(fa, ua, t0 + s0);
      t1 = r16(fb, ub, t1 + s1);
      t2 = r16(fc, uc, t2 + s2);
      t3 = r16(fd, ud, t3 + s3);
    }
  }
  out[0] = t0;
  out[1] = t1;
  out[2] = t2;
  out[3] = t3;
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
function dot(x: Float64Array, xo: number, w: Float64Array, K: number): number {
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
