// The attention core as a variant of the exact op (exact-op.ts's descriptor for 'attention' and 'attn_block'):
// rotary, scores, softmax and values from the fp64 oracle's functions with the variant's parameters, on the heads the
// asked columns cover; and the flash-style online softmax that never rescales, dealt to one or several partial states.
import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from '../../kernels/cpu/attention';
import { splitHeadsRotaryF64 } from '../../kernels/cpu/rotary';
import { gather, round } from './arrays';
import type { OpData, Variant } from './types';

/** The attention core on the heads `cols` covers (whole heads), rotary to values. */
export function attention(
  d: OpData,
  v: Variant,
  cols: Int32Array | null,
  qkv: ArrayLike<number> = d.inputs[0],
): Float64Array {
  const { cfg } = d;
  const T = d.tokens.length;
  const H = cfg.numHeads;
  const hd = cfg.headDim;
  const {
    q,
    k,
    v: vals,
  } = splitHeadsRotaryF64(
    qkv,
    T,
    H,
    hd,
    v.rotaryNdims ?? cfg.rotaryNdims,
    v.rotaryBase ?? cfg.rotaryBase,
    d.angles,
    v.rotary,
  );
  const heads = cols ? [...new Set(Array.from(cols, (c) => Math.floor(c / hd)))].sort((a, b) => a - b) : null;
  const pick = (a: Float64Array) => {
    if (!heads) return a;
    const out = new Float64Array(heads.length * T * hd);
    heads.forEach((h, i) => {
      out.set(a.subarray(h * T * hd, (h + 1) * T * hd), i * T * hd);
    });
    return out;
  };
  const Hs = heads ? heads.length : H;
  const [qs, ks, vs] = [pick(q), pick(k), pick(vals)];
  let ctx: Float64Array;
  if (v.noRescale) ctx = onlineNoRescale(qs, ks, vs, Hs, T, hd, v.noRescale, v);
  else {
    const scores = attentionScoresF64(qs, ks, Hs, T, hd, v.scores);
    const probs = softmaxCausalF64(scores, Hs, T, v.scores);
    ctx = attentionValuesF64(round(v.probsFormat, probs), vs, Hs, T, hd, v.scores);
  }
  if (!heads) return gather(ctx, T, H * hd, cols);
  // ctx is [T, Hs·hd] over the picked heads: map the asked columns into it.
  const at = new Map(heads.map((h, i) => [h, i]));
  const out = new Float64Array(T * cols!.length);
  for (let t = 0; t < T; t++)
    for (let j = 0; j < cols!.length; j++) {
      const c = cols![j];
      out[t * cols!.length + j] = ctx[t * Hs * hd + at.get(Math.floor(c / hd))! * hd + (c % hd)];
    }
  return out;
}

/** Flash-style attention over key blocks whose running sums and accumulators are never rescaled (Variant.noRescale). */
function onlineNoRescale(
  q: Float64Array,
  k: Float64Array,
  vals: Float64Array,
  H: number,
  T: number,
  hd: number,
  nr: { block: number; threads: number },
  v: Variant,
): Float64Array {
  const scale = v.scores?.scale ?? 1 / Math.sqrt(hd);
  const { block, threads } = nr;
  const out = new Float64Array(T * H * hd);
  const m = new Float64Array(threads);
  const l = new Float64Array(threads);
  const o = Array.from({ length: threads }, () => new Float64Array(hd));
  for (let h = 0; h < H; h++)
    for (let i = 0; i < T; i++) {
      m.fill(Number.NEGATIVE_INFINITY);
      l.fill(0);
      for (const a of o) a.fill(0);
      for (let j0 = 0; j0 <= i; j0 += block * threads)
        for (let g = 0; g < threads; g++) {
          const jc = j0 + g * block;
          if (jc > i) break;
          const j1 = Math.min(i, jc + block - 1);
          const s: number[] = [];
          for (let j = jc; j <= j1; j++) {
            let dot = 0;
            for (let e = 0; e < hd; e++) dot += q[(h * T + i) * hd + e] * k[(h * T + j) * hd + e];
            s.push(dot * scale);
          }
          const mNew = Math.max(m[g], ...s);
          for (let j = jc; j <= j1; j++) {
            const p = Math.exp(s[j - jc] - mNew);
            l[g] += p;
            for (let e = 0; e < hd; e++) o[g][e] += p * vals[(h * T + j) * hd + e];
          }
          m[g] = mNew;
        }
      // The partial states merged into the first, in order: each partial scaled to the new maximum.
      for (let g = 1; g < threads; g++) {
        if (!(l[g] > 0)) continue;
        const mNew = Math.max(m[0], m[g]);
        const beta = Math.exp(m[g] - mNew);
        l[0] += l[g] * beta;
        for (let e = 0; e < hd; e++) o[0][e] += o[g][e] * beta;
        m[0] = mNew;
      }
      for (let e = 0; e < hd; e++) out[i * H * hd + h * hd + e] = o[0][e] / l[0];
    }
  return out;
}
