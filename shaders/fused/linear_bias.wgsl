// Fused linear: y[M, N] = x[M, K] · W[N, K]^T (+ b[N]), the epilogue of the shared GEMM core
// (common/gemm_core.wgsl; split-K: common/gemm_reduce.wgsl). The bias is added to the f32 sum and each
// output is rounded once by st().

struct Params { M: u32, N: u32, K: u32, k_chunk: u32, has_bias: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> b: array<f32>;       // [N] (a dummy when has_bias = 0)
@group(0) @binding(2) var<storage, read_write> y: array<f32>; // [M, N]
const GEMM_IN: u32 = 3u; // x [M, K], w [N, K], workspace: declared by the core / the reduction

fn gemm_w_row(n: u32) -> u32 {
  return n;
}

/** Row m, columns n .. n + 3 of x·W^T (f32 sums). */
fn gemm_epilogue(m: u32, n: u32, v: vec4f) {
  for (var c = 0u; c < 4u; c++) {
    if (n + c < params.N) {
      var out = v[c];
      if (params.has_bias != 0u) {
        out += b[n + c];
      }
      y[m * params.N + n + c] = st(out);
    }
  }
}
