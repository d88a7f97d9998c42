// The fp64 forms of the Llama family's causes that the registry's variants cannot say and that belong to no one op
// (family-causes-library.ts's Candidate.form; an op's own causes' forms sit in its op module, kernels/ops/): each
// takes the step's Fp64Args and computes the op the miswritten way, in fp64, with the roundings the miswritten kernel
// makes at the places it makes them (so a run of that kernel is reproduced to its last bits but for the rare value an
// fp32 step puts on the other side of a half rounding boundary).
// - A linear whose running sum is kept in half: products and adds in fp32 within a chunk of K, the sum rounded at
//   the end of each chunk (chunk 1: after every add), the bias added in fp32 at the end.
// - The attention core in half: q, k, v rounded, q·k rounded, times the scale rounded, the softmax rounded, the
//   value product rounded.
// - The attention core with one cached position out of sight from some row on (a decode kernel's dropped slot).
// - A linear without its bias; the rotary of the decode's rows at other positions.

import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from '../kernels/cpu/attention';
import { FP64_FORMS } from '../kernels/cpu/op-fp64';
import { attentionParts } from '../kernels/ops/attention';
import { gammaF32, type NumFormat, roundArray, roundTo } from '../numeric/round';
import type { LinearWeights } from '../numeric/types';
import type { Fp64Form } from '../ops/types';

/**
 * x [T, K] · W^T with the running sum in `format`: within each chunk of K the products and adds in fp32 (k in
 * order), the chunk's sum added to the running sum in fp32 and rounded to the format; the bias added in fp32 last.
 * A GEMM sums a chunk in an order of its own: `bound` -1 / 1 takes each chunk's sum as its exact value (of the fp32
 * products) minus / plus the bound on any order's fp32 sum of them, γ(n-1)·Σ|p|; every step after is monotone, so
 * the two outputs bound what any order gives (Candidate.orderSpread).
 */

export function accHalfForm(format: NumFormat, chunk: number, bound: -1 | 0 | 1 = 0): Fp64Form {
  return (a) => {
    const { weight, bias } = a.weights as LinearWeights;
    const [N, K] = weight.shape;
    const x = a.inputs[0];
    const T = x.length / K;
    const W = weight.data;
    const f = Math.fround;
    const out = new Float64Array(T * N);
    for (let t = 0; t < T; t++)
      for (let n = 0; n < N; n++) {
        let acc = 0;
        for (let k0 = 0; k0 < K; k0 += chunk) {
          let part = 0;
          const end = Math.min(K, k0 + chunk);
          if (bound === 0) for (let k = k0; k < end; k++) part = f(part + f(x[t * K + k] * W[n * K + k]));
          else {
            // the exact sum of the fp32 products ± the bound on any order's fp32 sum of them: γ(n-1) Σ|p|
            let sum = 0;
            let abs = 0;
            for (let k = k0; k < end; k++) {
              const p = f(x[t * K + k] * W[n * K + k]);
              sum += p;
              abs += Math.abs(p);
            }
            const g = gammaF32(end - k0 - 1);
            part = sum + bound * g * abs;
          }
          acc = roundTo(format, f(acc + part));
        }
        out[t * N + n] = bias ? f(acc + bias.data[n]) : acc;
      }
    return out;
  };
}

/** A linear without its bias. */
export const biasDropped: Fp64Form = (a) => {
  const w = a.weights as LinearWeights;
  return FP64_FORMS[a.step.op]({ ...a, weights: { weight: w.weight, bias: null } });
};

/**
 * The attention core in `format`: q, k, v rounded; q·k rounded; times the scale (an fp32 constant) rounded; the
 * softmax (fp32 in a kernel, fp64 here) rounded; the value product rounded.
 */
export function attentionHalfForm(format: NumFormat): Fp64Form {
  return (a) => {
    const { H, hd, q, k, v, variant } = attentionParts(a);
    const r = (u: ArrayLike<number>) => roundArray(format, u);
    const scale = Math.fround(variant.scale ?? 1 / Math.sqrt(hd));
    const raw = r(attentionScoresF64(r(q), r(k), H, a.T, hd, { ...variant, scale: 1 }));
    const scores = r(raw.map((s) => s * scale));
    const probs = r(softmaxCausalF64(scores, H, a.T, variant));
    return r(attentionValuesF64(probs, r(v), H, a.T, hd, variant));
  };
}

/** The attention core with cached position `position` out of sight of every row from `from` on. */
export function positionDroppedForm(position: number, from: number): Fp64Form {
  return (a) => {
    const { H, hd, q, k, v, variant } = attentionParts(a);
    const T = a.T;
    const scores = attentionScoresF64(q, k, H, T, hd, variant);
    if (position < T)
      for (let h = 0; h < H; h++)
        for (let i = Math.max(from, position + 1); i < T; i++) scores[(h * T + i) * T + position] = -Infinity;
    // softmaxCausalF64 reads the keys the mask allows: a -Infinity among them is exp(-Inf) = 0 there.
    return attentionValuesF64(softmaxCausalF64(scores, H, T, variant), v, H, T, hd, variant);
  };
}

/** The rotary of every row from `from` on at position `at(t)` instead of t (the rows before at their own). */
export function rotaryPositionsForm(from: number, at: (t: number) => number): Fp64Form {
  return (a) => {
    const positions = Array.from({ length: a.T }, (_, t) => (t < from ? t : at(t)));
    return FP64_FORMS.rotary({ ...a, variant: { ...(a.variant ?? {}), positions } });
  };
}
