// Exact (erf) GELU in f32, as Hugging Face's "gelu": gelu(x) = 0.5 * x * erfc(-x / sqrt(2)).
// WGSL has no erf. erfc is computed with the Chebyshev-fitted form of Numerical Recipes (erfcc,
// fractional error < 1.2e-7 for every argument), so both tails stay accurate in relative terms:
// for x < 0 the result is 0.5 * x * erfc(|x|/sqrt2) (relative error ~1.2e-7), for x >= 0 it is
// x - 0.5 * x * erfc(x/sqrt2) (absolute error of the factor < 6e-8, i.e. about one f32 ulp).

fn erfc_nonneg(z: f32) -> f32 {
  // z >= 0
  let t = 1.0 / (1.0 + 0.5 * z);
  let poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
    t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return t * exp(-z * z + poly);
}

fn gelu_exact(x: f32) -> f32 {
  let z = abs(x) * 0.70710678118654752;
  let c = erfc_nonneg(z);
  if (x < 0.0) {
    return 0.5 * x * c;
  }
  return x - 0.5 * x * c;
}
