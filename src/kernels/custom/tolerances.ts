// Tolerance rules of the kernel tests: per-element bounds of a correct fp32 kernel against the fp64 oracle,
// derived in the comments. One definition for the isolated tests of custom kernels (recipes.ts) and the
// kernel tests of the shipped ones (src/kernels/*.test.ts), so the two cannot drift apart.

import { gammaF32 } from '../../numeric/round';
import { attentionScoresF64 } from '../cpu/attention';
import { layerNormF64 } from '../cpu/layernorm';
import { FLASH_KEY_CHUNK } from '../flash-attention';
import { dotBound, U32 } from '../harness';

/**
 * LayerNorm, x̂ = (x − mean)·inv: the mean's rounding (≤ γ_d·mean|x|) shifts every x̂ by ≤ γ_d·mean|x|/σ; the
 * variance, rsqrt and the ~4 remaining roundings add ≤ (d + 8)·u relative to x̂, ·w + b two more ((d + 10)·u
 * in all); then 4u|ref|.
 */
export function layerNormTol(
  x: ArrayLike<number>,
  T: number,
  d: number,
  w: ArrayLike<number>,
  ref: ArrayLike<number>,
  eps: number,
): (i: number) => number {
  const xhat = layerNormF64(x, T, d, new Float64Array(d).fill(1), new Float64Array(d), eps);
  const rowTol = Array.from({ length: T }, (_, t) => {
    let mean = 0;
    let meanAbs = 0;
    for (let c = 0; c < d; c++) {
      mean += x[t * d + c] / d;
      meanAbs += Math.abs(x[t * d + c]) / d;
    }
    let v = 0;
    for (let c = 0; c < d; c++) v += (x[t * d + c] - mean) ** 2 / d;
    return ((d + 2) * U32 * meanAbs) / Math.sqrt(v + eps);
  });
  return (i: number) =>
    Math.abs(w[i % d]) * (rowTol[Math.floor(i / d)] + (d + 10) * U32 * Math.abs(xhat[i])) +
    4 * U32 * Math.abs(ref[i]) +
    1e-12;
}

/** A GEMM output: K products and the bias summed in any order, |err| ≤ γ_{K+2}·(Σ|x w| + |b|). */
export function linearTol(K: number, absZ: ArrayLike<number>): (i: number) => number {
  return (i) => dotBound(K + 2, absZ[i]) + 1e-30;
}

/**
 * GELU after the GEMM: z carries E = γ_{K+2}(Σ|xw| + |b|); |gelu'| ≤ 1.13 turns that into 1.13·E;
 * gelu_exact itself adds (4e-7 + (16 + z²)u)|z| (the erfc approximation and its f32 evaluation).
 */
export function linearGeluTol(
  K: number,
  z: ArrayLike<number>,
  absZ: ArrayLike<number>,
): (i: number) => number {
  return (i) => {
    const zi = z[i];
    return 1.13 * dotBound(K + 2, absZ[i]) + (4e-7 + (16 + zi * zi) * U32) * (Math.abs(zi) + 1e-3) + 1e-30;
  };
}

/** GEMM + residuals: one sum of K + 2 (or K + 3) terms in some order, γ_{K+3}(Σ|xw| + |b| + |r1| + |r2|). */
export function linearResidualTol(
  K: number,
  absZ: ArrayLike<number>,
  r1: ArrayLike<number>,
  r2: ArrayLike<number> | null,
): (i: number) => number {
  return (i) => dotBound(K + 3, absZ[i] + Math.abs(r1[i]) + (r2 ? Math.abs(r2[i]) : 0));
}

/**
 * QKV + rotary, per output element in [H, T, hd] (a, the |x||W|^T + |b| sums split the same way): a
 * pass-through element has E = γ_{d+2}·a; a rotated one out = y0·c ∓ y1·s gets E0 + E1 (|c|, |s| ≤ 1), the
 * tables' rounding to f32 (u each) and three roundings: E0 + E1 + 4u(a0 + a1).
 */
export function qkvRotaryTol(
  a: Float64Array,
  d: number,
  hd: number,
  r: number,
  rotated: boolean,
): Float64Array {
  const half = r / 2;
  return a.map((ai, i) => {
    const e = i % hd;
    const E = dotBound(d + 2, ai);
    if (!rotated || e >= r) return E + 1e-30;
    const ap = a[i - e + (e < half ? e + half : e - half)];
    return E + dotBound(d + 2, ap) + 4 * U32 * (ai + ap) + 1e-30;
  });
}

/**
 * Flash attention, per element ctx[i, h·hd + e] of ctx [T, H·hd], first order in u = 2^-24:
 *  - a score s_j = (q·k_j)·scale is off by δs ≤ γ_{hd+2}·A_i, A_i = max_{j≤i} Σ_e |q_e k_je|·scale (dotBound:
 *    hd products and sums, the scale product and the f32 rounding of scale itself);
 *  - p_j = exp(s_j − m) then has relative error ≤ 2δs + u (the subtraction) + (3 + 2X_i)u (WGSL's exp
 *    accuracy, X_i = max_j (m − s_j), the row's score range); the value of m is irrelevant (softmax is
 *    shift-invariant);
 *  - o = Σ p_j v_j and l = Σ p_j each take ≤ i + 1 rounded additions plus one rounded rescale per key chunk
 *    of 8, then the merge of the BK/8 partial sums of a row (a rescale, a scaling and an addition each; the
 *    factors cancel in o / l: both get the same ones up to the rounding of exp), then one division;
 *  - ctx = o / l, so a relative error ε_j in p_j moves ctx by ≤ Σ_j ε_j p_j (|v_j| + |ctx|) ≤ 2ε·Σ p|v|
 *    (pAbsV = Σ_j p_ij|v_je|).
 * Hence |err| ≤ [4γ_{hd+2}A_i + 2(4 + 2X_i)u + 2γ_{T + T/8 + 3BK/8 + 2}]·pAbsV. `s` are the exact scores
 * [H, T, T] (scaled), q, k the kernel's inputs.
 */
export function flashTol(
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  s: ArrayLike<number>,
  pAbsV: ArrayLike<number>,
  H: number,
  T: number,
  hd: number,
  BK: number,
): (i: number) => number {
  const sAbs = attentionScoresF64(Float64Array.from(q, Math.abs), Float64Array.from(k, Math.abs), H, T, hd);
  const rowFactor = new Float64Array(H * T); // [H, T]
  for (let r = 0; r < H * T; r++) {
    const i = r % T;
    let A = 0;
    let m = Number.NEGATIVE_INFINITY;
    let lo = Number.POSITIVE_INFINITY;
    for (let j = 0; j <= i; j++) {
      A = Math.max(A, sAbs[r * T + j]);
      m = Math.max(m, s[r * T + j]);
      lo = Math.min(lo, s[r * T + j]);
    }
    const adds = T + T / FLASH_KEY_CHUNK + (3 * BK) / FLASH_KEY_CHUNK + 2;
    rowFactor[r] = 4 * dotBound(hd + 2, A) + 2 * (4 + 2 * (m - lo)) * U32 + 2 * gammaF32(adds);
  }
  const d = H * hd;
  return (idx) => {
    const i = Math.floor(idx / d);
    const head = Math.floor((idx % d) / hd);
    return rowFactor[head * T + i] * pAbsV[idx] + 1e-30;
  };
}
