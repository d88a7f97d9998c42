// Rotary angles θ[t, i] = t · inv_freq[i] (i < rotary_ndims / 2), two ways. 'exact': in fp64 from an fp64 inv_freq,
// the model as written. 'hf-fp32': as Hugging Face transformers computes them, whatever the model's dtype —
// inv_freq = 1 / base^(2i / r) with every step rounded to fp32, then t · inv_freq rounded to fp32 once (a K = 1
// matmul) — and only the cos/sin of that angle taken in fp64. A run dumped from PyTorch carries those fp32 angles
// (≈ 1e-6 absolute at position 20, 8e-6 at 128), so its analysis measures against them: the difference is HF's
// definition of the model, not an error of the run.
//
// `rope_scaling` (transformers `modeling_rope_utils.py`) changes only the table inv_freq, never the rotation:
// - 'linear' (`_compute_linear_scaling_rope_parameters`): inv_freq / factor.
// - 'llama3' (`_compute_llama3_parameters`): with wavelen = 2π / inv_freq, low = original / low_freq_factor and
//   high = original / high_freq_factor (original = original_max_position_embeddings): wavelen < high keeps inv_freq,
//   wavelen > low divides it by factor, and between them it is interpolated,
//   s = (original / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor),
//   inv = (1 - s) · inv / factor + s · inv. HF does each step on fp32 tensors ('hf-fp32' rounds each step so).
// Neither changes the attention factor (1.0 for both in HF).

import type { RopeScaling } from '../../numeric/types';

export type RotaryAngles = 'exact' | 'hf-fp32';

export type { RopeScaling };

/** One line naming what is wrong with a scaling's parameters, or null when it can be used. */
export function ropeScalingProblem(s: RopeScaling): string | null {
  if (s.type === 'default') return null;
  if (!(s.factor > 0) || !Number.isFinite(s.factor))
    return `rope_scaling.factor ${s.factor} must be a positive number`;
  if (s.type === 'linear') return null;
  if (!(s.lowFreqFactor > 0) || !(s.highFreqFactor > s.lowFreqFactor))
    return `rope_scaling (llama3): need 0 < low_freq_factor (${s.lowFreqFactor}) < high_freq_factor (${s.highFreqFactor})`;
  if (!(s.originalMaxPositionEmbeddings > 0))
    return `rope_scaling (llama3): original_max_position_embeddings ${s.originalMaxPositionEmbeddings} must be positive`;
  return null;
}

type Llama3 = Extract<RopeScaling, { type: 'llama3' }>;

/** The llama3 scaling of one unscaled inv_freq value in fp64, HF's formula as written. */
function llama3Exact(inv: number, s: Llama3): number {
  const orig = s.originalMaxPositionEmbeddings;
  const wavelen = (2 * Math.PI) / inv;
  const scaled = wavelen > orig / s.lowFreqFactor ? inv / s.factor : inv;
  if (wavelen < orig / s.highFreqFactor || wavelen > orig / s.lowFreqFactor) return scaled;
  const smooth = (orig / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
  return ((1 - smooth) * scaled) / s.factor + smooth * scaled;
}

/**
 * The same as torch computes it on fp32 tensors: a Python scalar is cast to fp32 first, and `scalar / tensor` is
 * `tensor.reciprocal() * scalar` (torch `Tensor.__rtruediv__`), two roundings.
 */
function llama3Fp32(inv: number, s: Llama3): number {
  const f = Math.fround;
  const orig = s.originalMaxPositionEmbeddings;
  const lowWavelen = f(orig / s.lowFreqFactor); // Python floats, compared with an fp32 tensor
  const highWavelen = f(orig / s.highFreqFactor);
  const wavelen = f(f(1 / inv) * f(2 * Math.PI));
  const scaled = wavelen > lowWavelen ? f(inv / f(s.factor)) : inv;
  if (wavelen < highWavelen || wavelen > lowWavelen) return scaled;
  const smooth = f(
    f(f(f(1 / wavelen) * f(orig)) - f(s.lowFreqFactor)) / f(s.highFreqFactor - s.lowFreqFactor),
  );
  return f(f(f(f(1 - smooth) * scaled) / f(s.factor)) + f(smooth * scaled));
}

/**
 * inv_freq[i] = 1 / base^(2i / rotaryNdims), i < rotaryNdims / 2: fp64, or with HF's fp32 roundings; then the
 * `rope_scaling` if one is given (absent or 'default': GPT-NeoX's table, bit for bit as before scaling existed).
 */
export function rotaryInvFreq(
  rotaryNdims: number,
  base: number,
  angles: RotaryAngles = 'exact',
  scaling?: RopeScaling | null,
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
  if (!scaling || scaling.type === 'default') return out;
  const problem = ropeScalingProblem(scaling);
  if (problem) throw new Error(problem);
  for (let i = 0; i < half; i++) {
    if (scaling.type === 'linear')
      out[i] = angles === 'exact' ? out[i] / scaling.factor : f(out[i] / f(scaling.factor));
    else out[i] = angles === 'exact' ? llama3Exact(out[i], scaling) : llama3Fp32(out[i], scaling);
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
  scaling?: RopeScaling | null,
): Float64Array {
  return angleTableOf(T, rotaryInvFreq(r, base, angles, scaling), angles, positions);
}

/** θ[t, i] = pos(t) · inv[i] ([T, inv.length]); rounded to fp32 once under 'hf-fp32' (HF's K = 1 matmul). */
export function angleTableOf(
  T: number,
  inv: ArrayLike<number>,
  angles: RotaryAngles = 'exact',
  positions?: ArrayLike<number>,
): Float64Array {
  const half = inv.length;
  const out = new Float64Array(T * half);
  for (let t = 0; t < T; t++) {
    const pos = positions ? positions[t] : t;
    for (let i = 0; i < half; i++)
      out[t * half + i] = angles === 'exact' ? pos * inv[i] : Math.fround(pos * inv[i]);
  }
  return out;
}
