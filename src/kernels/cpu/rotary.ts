// fp64 oracle: split the fused QKV into heads and apply rotary embeddings (HF GPTNeoX, rotate-half).
import { type RotaryAngles, rotaryAngleTable } from './rotary-angles';

export { rotaryInvFreq } from './rotary-angles';

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
  const theta = rotaryAngleTable(T, rotaryNdims, base, angles); // [T, r/2]
  const cos = new Float64Array(half);
  const sin = new Float64Array(half);
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < half; i++) {
      const angle = theta[t * half + i];
      cos[i] = Math.cos(angle);
      sin[i] = Math.sin(angle);
    }
    for (let h = 0; h < H; h++) {
      const src = (t * H + h) * 3 * hd; // qkv[t, h, 0, 0]
      const dst = (h * T + t) * hd; // out[h, t, 0]
      for (let e = 0; e < hd; e++) {
        q[dst + e] = qkv[src + e];
        k[dst + e] = qkv[src + hd + e];
        v[dst + e] = qkv[src + 2 * hd + e];
      }
      for (let i = 0; i < half; i++) {
        const q1 = q[dst + i];
        const q2 = q[dst + i + half];
        q[dst + i] = q1 * cos[i] - q2 * sin[i];
        q[dst + i + half] = q2 * cos[i] + q1 * sin[i];
        const k1 = k[dst + i];
        const k2 = k[dst + i + half];
        k[dst + i] = k1 * cos[i] - k2 * sin[i];
        k[dst + i + half] = k2 * cos[i] + k1 * sin[i];
      }
    }
  }
  return { q, k, v };
}
