// dense_4h_to_h + residual epilogue with attention.dense's split-K reduction folded in (parallel residual):
// the epilogue of the shared GEMM core (common/gemm_core.wgsl; split-K: common/gemm_reduce.wgsl). Per row m,
// columns n .. n + 3 it first forms attn_output exactly as attention.dense's own reduction would
// (common/gemm_reduce.wgsl with fused/linear_bias.wgsl): the dense partials [S', M, N] added from 0 in split
// order through acc(), + dense bias, one st() — writes it (the attn_out tap), and adds it as
// fused/linear_residual.wgsl adds its r2: y = ((x·W^T + b) + attn_output) + r1, one st(). Same operations in
// the same order, so the same bits as the unfolded pair; src/engine/plan-fold.ts decides where it runs (never
// with fault switches: this file has none).

struct Params {
  M: u32, N: u32, K: u32, k_chunk: u32, has_bias: u32,
  dense_K: u32, dense_k_chunk: u32, dense_has_bias: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> b: array<f32>;             // [N] (a dummy when has_bias = 0)
@group(0) @binding(2) var<storage, read> r1: array<f32>;            // [M, N] hidden_states
@group(0) @binding(3) var<storage, read> dense_b: array<f32>;       // [N] attention.dense bias (or a dummy)
@group(0) @binding(4) var<storage, read> dense_part: array<f32>;    // [S', M, N] attention.dense's raw partials
@group(0) @binding(5) var<storage, read_write> attn: array<f32>;    // [M, N] attn_output
@group(0) @binding(6) var<storage, read_write> y: array<f32>;       // [M, N]
const GEMM_IN: u32 = 7u; // x [M, K], w [N, K], workspace: declared by the core / the reduction

fn gemm_w_row(n: u32) -> u32 {
  return n;
}

/** Row m, columns n .. n + 3 of x·W^T (f32 sums). */
fn gemm_epilogue(m: u32, n: u32, v: vec4f) {
  let S = (params.dense_K + params.dense_k_chunk - 1u) / params.dense_k_chunk;
  var a = vec4f(0.0);
  for (var s = 0u; s < S; s++) {
    let o = (s * params.M + m) * params.N + n;
    for (var c = 0u; c < 4u; c++) {
      if (n + c < params.N) {
        a[c] = acc(a[c] + dense_part[o + c]);
      }
    }
  }
  for (var c = 0u; c < 4u; c++) {
    if (n + c < params.N) {
      let o = m * params.N + n + c;
      var at = a[c];
      if (params.dense_has_bias != 0u) {
        at += dense_b[n + c];
      }
      let r2 = st(at);
      attn[o] = r2;
      var out = v[c];
      if (params.has_bias != 0u) {
        out += b[n + c];
      }
      out += r2;
      out += r1[o];
      y[o] = st(out);
    }
  }
}
