// fp64 oracle: split the fused QKV into heads and apply rotary embeddings (HF GPTNeoX, rotate-half).
import { angleTableOf, type RotaryAngles, rotaryAngleTable } from './rotary-angles';

export { rotaryInvFreq } from './rotary-angles';

/** The ways the split and the rotation are miswritten (the causes, src/compare/causes/); the defaults are the model. */
export interface RotaryVariant {
  /** Rotate interleaved pairs (2i, 2i + 1), GPT-J's convention, instead of halves (i, i + r/2). */
  gptj?: boolean;
  /** Read the fused QKV as [T, 3, H, hd] instead of [T, H, 3, hd]. */
  layout3?: boolean;
  /** Row t rotated at positions[t] instead of t. */
  positions?: ArrayLike<number>;
}

/**
 * qkv [T, H, 3, hd] (HF fused layout: per head q = [0, hd), k = [hd, 2hd), v = [2hd, 3hd)) -> q, k, v each
 * [H, T, hd]; q and k rotated on their first rotaryNdims dims at positions t = 0..T-1:
 * out[i] = x[i] cos - x[i+half] sin, out[i+half] = x[i+half] cos + x[i] sin, angle = t · inv_freq[i] (rotary-angles.ts).
 */
export function splitHeadsRotaryF64(
  qkv: ArrayLike<number>,
  T: number,
  H: number,
  hd: number,
  rotaryNdims: number,
  base: number,
  angles: RotaryAngles = 'exact',
  variant: RotaryVariant = {},
): { q: Float64Array; k: Float64Array; v: Float64Array } {
  if (rotaryNdims < 0 || rotaryNdims > hd || rotaryNdims % 2 !== 0) {
    throw new Error(`splitHeadsRotaryF64: rotaryNdims ${rotaryNdims} must be even and within [0, ${hd}]`);
  }
  if (qkv.length < T * H * 3 * hd)
    throw new Error(`splitHeadsRotaryF64: qkv too short for [${T}, ${H}, 3, ${hd}]`);
  const q = new Float64Array(H * T * hd); // [H, T, hd]
  const k = new Float64Array(H * T * hd); // [H, T, hd]
  const v = new Float64Array(H * T * hd); // [H, T, hd]
  const half = rotaryNdims / 2;
  const theta = rotaryAngleTable(T, rotaryNdims, base, angles, variant.positions); // [T, r/2]
  // The partner of dim i and the cos/sin index it uses: halves (i, i + r/2) or GPT-J pairs (2j, 2j + 1).
  const first = (j: number) => (variant.gptj ? 2 * j : j);
  const second = (j: number) => (variant.gptj ? 2 * j + 1 : j + half);
  const cos = new Float64Array(half);
  const sin = new Float64Array(half);
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < half; i++) {
      const angle = theta[t * half + i];
      cos[i] = Math.cos(angle);
      sin[i] = Math.sin(angle);
    }
    for (let h = 0; h < H; h++) {
      // qkv[t, h, 0, 0] (or, misread, qkv[t, 0, h, 0] with the three parts H·hd apart)
      const src = variant.layout3 ? t * 3 * H * hd + h * hd : (t * H + h) * 3 * hd;
      const part = variant.layout3 ? H * hd : hd;
      const dst = (h * T + t) * hd; // out[h, t, 0]
      for (let e = 0; e < hd; e++) {
        q[dst + e] = qkv[src + e];
        k[dst + e] = qkv[src + part + e];
        v[dst + e] = qkv[src + 2 * part + e];
      }
      for (let i = 0; i < half; i++) {
        const a = dst + first(i);
        const b = dst + second(i);
        const q1 = q[a];
        const q2 = q[b];
        q[a] = q1 * cos[i] - q2 * sin[i];
        q[b] = q2 * cos[i] + q1 * sin[i];
        const k1 = k[a];
        const k2 = k[b];
        k[a] = k1 * cos[i] - k2 * sin[i];
        k[b] = k2 * cos[i] + k1 * sin[i];
      }
    }
  }
  return { q, k, v };
}

/**
 * The Llama family's rotary (HF `apply_rotary_pos_emb`, rotate-half): x [T, heads, hd] (a q or k projection's
 * output, [T, heads·hd]) -> [heads, T, hd], each head's first r = 2 · invFreq.length dims rotated at positions
 * t = 0..T-1 (or variant.positions), the rest copied. invFreq ([r/2], rotaryInvFreq: theta and rope_scaling are only
 * this table) is used as given; angle = t · invFreq[i], rounded to fp32 once under 'hf-fp32'. With an empty table
 * it is the head split alone (v).
 */
export function ropeHeadsF64(
  x: ArrayLike<number>,
  T: number,
  heads: number,
  hd: number,
  invFreq: ArrayLike<number>,
  angles: RotaryAngles = 'exact',
  variant: RotaryVariant = {},
): Float64Array {
  const half = invFreq.length;
  if (2 * half > hd) throw new Error(`ropeHeadsF64: ${2 * half} rotary dims exceed head_dim ${hd}`);
  if (x.length < T * heads * hd) throw new Error(`ropeHeadsF64: x too short for [${T}, ${heads}, ${hd}]`);
  const out = new Float64Array(heads * T * hd); // [heads, T, hd]
  const theta = angleTableOf(T, invFreq, angles, variant.positions); // [T, r/2]
  const first = (j: number) => (variant.gptj ? 2 * j : j);
  const second = (j: number) => (variant.gptj ? 2 * j + 1 : j + half);
  const cos = new Float64Array(half);
  const sin = new Float64Array(half);
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < half; i++) {
      cos[i] = Math.cos(theta[t * half + i]);
      sin[i] = Math.sin(theta[t * half + i]);
    }
    for (let h = 0; h < heads; h++) {
      const src = (t * heads + h) * hd; // x[t, h, 0]
      const dst = (h * T + t) * hd; // out[h, t, 0]
      for (let e = 0; e < hd; e++) out[dst + e] = x[src + e];
      for (let i = 0; i < half; i++) {
        const a = dst + first(i);
        const b = dst + second(i);
        const x1 = out[a];
        const x2 = out[b];
        out[a] = x1 * cos[i] - x2 * sin[i];
        out[b] = x2 * cos[i] + x1 * sin[i];
      }
    }
  }
  return out;
}
