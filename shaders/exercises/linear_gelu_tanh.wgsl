// Exercise (slot linear_gelu): the epilogue of linear + bias + GELU on the shared GEMM core,
// y[M, N] = gelu(x[M, K] · W[N, K]^T + b[N]). The model (GPT-NeoX, hidden_act "gelu") uses the exact GELU,
// 0.5·z·(1 + erf(z/√2)); this epilogue uses the tanh approximation, a different function (they differ by up
// to about 5e-4 near z = ±2).
// Goal: the isolated test passes and the model agrees with the reference path within the noise floor.
// (WGSL has no erf; this slot's includes define gelu_exact(z), accurate to f32 rounding.)

struct Params { M: u32, N: u32, K: u32, k_chunk: u32, has_bias: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> b: array<f32>;       // [N] (a dummy when has_bias = 0)
@group(0) @binding(2) var<storage, read_write> y: array<f32>; // [M, N]
const GEMM_IN: u32 = 3u; // x [M, K], w [N, K], workspace: declared by the core / the reduction

override FAULT_RELU: bool = false;

fn gemm_w_row(n: u32) -> u32 {
  return n;
}

/** GELU, tanh approximation: 0.5·z·(1 + tanh(√(2/π)·(z + 0.044715·z³))). */
fn gelu_tanh(z: f32) -> f32 {
  return 0.5 * z * (1.0 + tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
}

/** Row m, columns n .. n + 3 of x·W^T (f32 sums). */
fn gemm_epilogue(m: u32, n: u32, v: vec4f) {
  for (var c = 0u; c < 4u; c++) {
    if (n + c < params.N) {
      var z = v[c];
      if (params.has_bias != 0u) {
        z += b[n + c];
      }
      y[m * params.N + n + c] = st(select(gelu_tanh(z), max(z, 0.0), FAULT_RELU));
    }
  }
}
