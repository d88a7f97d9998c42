// Fused linear + residual epilogue (GPT-NeoX dense_4h_to_h / attention dense + residual), the epilogue of the
// shared GEMM core (common/gemm_core.wgsl; split-K: common/gemm_reduce.wgsl), in Hugging Face's order, in
// f32, each output rounded once by st():
//   RESIDUALS = 2 (parallel residual): y = ((x·W^T + b) + r2) + r1   (HF `mlp_output + attn_output +
//                                       hidden_states`, r1 = hidden_states, r2 = attn_output)
//   RESIDUALS = 1 (sequential):        y = (x·W^T + b) + r1

struct Params { M: u32, N: u32, K: u32, k_chunk: u32, has_bias: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> b: array<f32>;       // [N] (a dummy when has_bias = 0)
@group(0) @binding(2) var<storage, read> r1: array<f32>;      // [M, N] hidden_states
@group(0) @binding(3) var<storage, read> r2: array<f32>;      // [M, N] attn_output (a dummy when RESIDUALS = 1)
@group(0) @binding(4) var<storage, read_write> y: array<f32>; // [M, N]
const GEMM_IN: u32 = 5u; // x [M, K], w [N, K], workspace: declared by the core / the reduction

override RESIDUALS: u32 = 2u;
// Teaching faults: the parallel residual wired up wrong (r2 added twice, r1 dropped); the bias dropped.
override FAULT_WIRING: bool = false;
override FAULT_DROP_BIAS: bool = false;

fn gemm_w_row(n: u32) -> u32 {
  return n;
}

/** Row m, columns n .. n + 3 of x·W^T (f32 sums). */
fn gemm_epilogue(m: u32, n: u32, v: vec4f) {
  for (var c = 0u; c < 4u; c++) {
    if (n + c < params.N) {
      let o = m * params.N + n + c;
      var out = v[c];
      if (params.has_bias != 0u && !FAULT_DROP_BIAS) {
        out += b[n + c];
      }
      if (RESIDUALS >= 2u) {
        out += r2[o];
        if (FAULT_WIRING) {
          out += r2[o];
        } else {
          out += r1[o];
        }
      } else {
        out += r1[o];
      }
      y[o] = st(out);
    }
  }
}
