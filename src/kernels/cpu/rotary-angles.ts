// Rotary angles θ[t, i] = t · inv_freq[i] (i < rotary_ndims / 2), two ways. 'exact': in fp64 from an fp64 inv_freq,
// the model as written. 'hf-fp32': as Hugging Face transformers computes them, whatever the model's dtype —
// inv_freq = 1 / base^(2i / r) with every step rounded to fp32, then t · inv_freq rounded to fp32 once (a K = 1
// matmul) — and only the cos/sin of that angle taken in fp64. A run dumped from PyTorch carries those fp32 angles
// (≈ 1e-6 absolute at position 20, 8e-6 at 128), so its analysis measures against them: the difference is HF's
// definition of the model, not an error of the run.

export type RotaryAngles = 'exact' | 'hf-fp32';

/** inv_freq[i] = 1 / base^(2i / rotaryNdims), i < rotaryNdims / 2: fp64, or with HF's fp32 roundings. */
export function rotaryInvFreq(
  rotaryNdims: number,
  base: number,
  angles: RotaryAngles = 'exact',
): Float64Array {
  const half = Math.floor(rotaryNdims / 2);
  const out = new Float64Array(half); // [r/2]
  const f = Math.fround;
  for (let i = 0; i < half; i++) {
    out[i] =
      angles === 'exact'
        ? 1 / base ** ((2 * i) / rotaryNdims)
        : f(1 / f(f(base) ** f((2 * i) / rotaryNdims)));
  }
  return out;
}

/** θ[t, i] for t < T, i < r/2 ([T, r/2], row-major); row t at position t, or positions[t] (a cause's positions). */
export function rotaryAngleTable(
  T: number,
  r: number,
  base: number,
  angles: RotaryAngles = 'exact',
  positions?: ArrayLike<number>,
): Float64Array {
  const half = Math.floor(r / 2);
  const inv = rotaryInvFreq(r, base, angles);
  const out = new Float64Array(T * half);
  for (let t = 0; t < T; t++) {
    const pos = positions ? positions[t] : t;
    for (let i = 0; i < half; i++)
      out[t * half + i] = angles === 'exact' ? pos * inv[i] : Math.fround(pos * inv[i]);
  }
  return out;
}
