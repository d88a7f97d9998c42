// SiLU (HF ACT2FN['silu'] = x · sigmoid(x)) written as x / (1 + e^-x): for x below about -88 e^-x overflows to
// +inf and the quotient is -0, the function's limit; no select needed.

fn silu(x: f32) -> f32 {
  return x / (1.0 + exp(-x));
}
