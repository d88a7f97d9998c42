// Weight matrices as the engine stores them on the GPU: f32 words, or (W_F16, for large models whose
// checkpoint is fp16 — a lossless choice) two f16 values packed per u32 word, element i in half (i & 1) of
// word i >> 1. The including kernel declares `w: array<u32>`; W_F16 itself lives in common/precision.wgsl.

fn load_w(i: u32) -> f32 {
  if (W_F16) {
    return unpack2x16float(w[i >> 1u])[i & 1u];
  }
  return bitcast<f32>(w[i]);
}
