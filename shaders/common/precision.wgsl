// Precision emulation shared by every kernel (both paths). Buffers stay f32; values are rounded where a real
// low-precision kernel would round them, exactly (round to nearest even, subnormals kept):
//   STORAGE_PREC  0 = fp32, 1 = fp16 storage, 2 = bf16 storage — applied by st() to every activation a kernel
//                 writes (and so to what the next op reads);
//   ACC_F16       accumulators rounded to fp16 as they run — applied by acc() after every accumulate step.
// pack2x16float / unpack2x16float are core WGSL (no shader-f16 needed); bf16 keeps the high 16 bits of the
// f32 after adding the round-to-nearest-even bias.

override STORAGE_PREC: u32 = 0u;
override ACC_F16: bool = false;
// Weight storage on the GPU (see common/weights.wgsl): false = f32 words, true = packed f16 pairs.
override W_F16: bool = false;

fn round_f16(v: f32) -> f32 {
  return unpack2x16float(pack2x16float(vec2f(v, 0.0))).x;
}

fn round_bf16(v: f32) -> f32 {
  let b = bitcast<u32>(v);
  if ((b & 0x7f800000u) == 0x7f800000u) { return v; } // inf / nan unchanged
  let rounded = b + 0x7fffu + ((b >> 16u) & 1u);
  return bitcast<f32>(rounded & 0xffff0000u);
}

/** An activation as stored in the storage precision. */
fn st(v: f32) -> f32 {
  if (STORAGE_PREC == 1u) { return round_f16(v); }
  if (STORAGE_PREC == 2u) { return round_bf16(v); }
  return v;
}

/** An accumulator after one accumulate step. */
fn acc(v: f32) -> f32 {
  if (ACC_F16) { return round_f16(v); }
  return v;
}
