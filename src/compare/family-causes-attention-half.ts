// The ends of the attention core in half (attentionHalfForm) over every way the run's fp32 steps could have gone
// (Candidate.orderSpread, the order floor; docs/CAUSES.md "Llama family"). The form rounds exact fp64 values to half;
// the run rounded values it computed in fp32 in an order of its own, so a half rounding flips wherever the two
// straddle a boundary. Softmax is not monotone in each output (a probability rises with its own score and falls with
// the others'), so the two ends are not two runs of the form but intervals carried through each step:
// - q and k (after the rotary, an fp32 step in the run): each within 16u of its rotary pair's norm (the rotation
//   keeps the norm; fp32 cos/sin within 2 ulp and three roundings give at most 7u(|x1| + |x2|) ≤ 10u‖pair‖), then
//   rounded to the format at both ends; v is a recorded value, rounded as the form rounds it.
// - q·k: the products of two half values are exact in fp32; their exact sum over the ends' corners, ± γ(hd-1)·Σ|q·k|
//   (any order's fp32 sum lies within), rounded; times the fp32 scale and rounded (monotone).
// - the probabilities: p_j's low end from its own low score and the others' high ones, its high end the other way,
//   each widened by the fp32 softmax's own error (x - max rounded: u·|x - max|; expf within 2 ulp; the sum γ(n-1);
//   the division u), then rounded.
// - the output Σ p_j v_j: the interval products summed at each end, ± γ(n-1)·Σ|p v|, rounded.
// Every step after a rounding is monotone in its interval's ends, so any run of the cause lies between the two.
// u = 2^-24 throughout (fp32's unit roundoff).

import { firstKey, kvHeadMap, lastKey } from '../kernels/cpu/attention';
import { attentionParts } from '../kernels/ops/attention';
import { gammaF32, type NumFormat, roundTo, U32 } from '../numeric/round';
import type { Fp64Form } from '../ops/types';

/** q and k after an fp32 rotary: within Q_ERR × their pair's norm of the exact values (see above). */
const Q_ERR = 16 * U32;

/**
 * [lo, hi] of each element of x [heads, T, hd] after an fp32 rotary on its first `rd` dims (rotate-half pairs
 * (e, e + rd/2)), rounded to `format`; a dim past `rd` is copied, exact.
 */
function rotatedEnds(
  format: NumFormat,
  x: ArrayLike<number>,
  hd: number,
  rd: number,
): [Float64Array, Float64Array] {
  const lo = new Float64Array(x.length);
  const hi = new Float64Array(x.length);
  const half = rd >> 1;
  for (let i = 0; i < x.length; i++) {
    const e = i % hd;
    const err = e >= 2 * half ? 0 : Q_ERR * Math.hypot(x[i], x[e < half ? i + half : i - half]);
    lo[i] = roundTo(format, x[i] - err);
    hi[i] = roundTo(format, x[i] + err);
  }
  return [lo, hi];
}

/**
 * The low (`end` -1) or high (`end` 1) end of what the attention core in `format` gives for any order of its fp32
 * sums and any fp32 rounding of its rotary and softmax: the output [T, H·hd] at that end (see the top of the file).
 */
export function attentionHalfEnd(format: NumFormat, end: -1 | 1): Fp64Form {
  return (a) => {
    const { H, hd, q, k, v, variant } = attentionParts(a);
    const T = a.T;
    const r = (u: number) => roundTo(format, u);
    const rd = a.cfg.family === 'llama' ? a.cfg.rotaryDim : hd;
    const [qlo, qhi] = rotatedEnds(format, q, hd, rd);
    const [klo, khi] = rotatedEnds(format, k, hd, rd);
    const vh = Float64Array.from(v, r);
    const scale = Math.fround(variant.scale ?? 1 / Math.sqrt(hd));
    const kvOf = kvHeadMap(H, variant);
    const d = H * hd;
    const out = new Float64Array(T * d);
    const slo = new Float64Array(T);
    const shi = new Float64Array(T);
    const plo = new Float64Array(T);
    const phi = new Float64Array(T);
    const gq = gammaF32(hd - 1);
    for (let h = 0; h < H; h++) {
      const kv = kvOf[h];
      for (let i = 0; i < T; i++) {
        const first = firstKey(i, variant);
        const last = lastKey(i, T, variant);
        if (last < first) continue;
        const qo = (h * T + i) * hd;
        // the scores' ends: the products' interval sums ± the fp32 order bound, rounded; scaled and rounded
        for (let j = first; j <= last; j++) {
          const ko = (kv * T + j) * hd;
          let lo = 0;
          let hi = 0;
          let abs = 0;
          for (let e = 0; e < hd; e++) {
            const c1 = qlo[qo + e] * klo[ko + e];
            const c2 = qlo[qo + e] * khi[ko + e];
            const c3 = qhi[qo + e] * klo[ko + e];
            const c4 = qhi[qo + e] * khi[ko + e];
            lo += Math.min(c1, c2, c3, c4);
            hi += Math.max(c1, c2, c3, c4);
            abs += Math.max(Math.abs(c1), Math.abs(c2), Math.abs(c3), Math.abs(c4));
          }
          const s1 = r(Math.fround(r(lo - gq * abs) * scale));
          const s2 = r(Math.fround(r(hi + gq * abs) * scale));
          slo[j] = Math.min(s1, s2);
          shi[j] = Math.max(s1, s2);
        }
        // the probabilities' ends: own score low against the others high, and the other way; the fp32 softmax's error
        let m = Number.NEGATIVE_INFINITY;
        for (let j = first; j <= last; j++) m = Math.max(m, shi[j]);
        let sumLo = 0;
        let sumHi = 0;
        let spread = 0;
        for (let j = first; j <= last; j++) {
          sumLo += Math.exp(slo[j] - m);
          sumHi += Math.exp(shi[j] - m);
          spread = Math.max(spread, m - slo[j]);
        }
        const n = last - first + 1;
        const delta = 1.01 * (2 * (U32 * spread + 4 * U32) + gammaF32(n - 1) + U32);
        for (let j = first; j <= last; j++) {
          const eLo = Math.exp(slo[j] - m);
          const eHi = Math.exp(shi[j] - m);
          const low = eLo / (eLo + (sumHi - eHi));
          const high = eHi / (eHi + Math.max(0, sumLo - eLo));
          plo[j] = r(low * (1 - delta));
          phi[j] = r(Math.min(1, high * (1 + delta)));
        }
        // the output's ends: the interval products summed ± the fp32 order bound, rounded
        const gv = gammaF32(n - 1);
        for (let e = 0; e < hd; e++) {
          let lo = 0;
          let hi = 0;
          let abs = 0;
          for (let j = first; j <= last; j++) {
            const x = vh[(kv * T + j) * hd + e];
            const c1 = plo[j] * x;
            const c2 = phi[j] * x;
            lo += Math.min(c1, c2);
            hi += Math.max(c1, c2);
            abs += Math.max(Math.abs(c1), Math.abs(c2));
          }
          out[i * d + h * hd + e] = end < 0 ? r(lo - gv * abs) : r(hi + gv * abs);
        }
      }
    }
    return out;
  };
}
