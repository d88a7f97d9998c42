// Fused linear + residual epilogue (GPT-NeoX dense_4h_to_h / attention dense + residual), on the shared GEMM
// core (common/gemm_core.wgsl), in Hugging Face's order, in f32, each output rounded once by st():
//   RESIDUALS = 2 (parallel residual): y = ((x·W^T + b) + r2) + r1   (HF `mlp_output + attn_output +
//                                       hidden_states`, r1 = hidden_states, r2 = attn_output)
//   RESIDUALS = 1 (sequential):        y = (x·W^T + b) + r1
// Grid: (ceil(N / BN), ceil(M / BM)) workgroups of GEMM_THREADS threads.

struct Params { M: u32, N: u32, K: u32, has_bias: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;       // [M, K]
@group(0) @binding(2) var<storage, read> w: array<u32>;       // f32 bits or packed f16 (load_w), [N, K]
@group(0) @binding(3) var<storage, read> b: array<f32>;       // [N] (a dummy when has_bias = 0)
@group(0) @binding(4) var<storage, read> r1: array<f32>;      // [M, N] hidden_states
@group(0) @binding(5) var<storage, read> r2: array<f32>;      // [M, N] attn_output (a dummy when RESIDUALS = 1)
@group(0) @binding(6) var<storage, read_write> y: array<f32>; // [M, N]

override RESIDUALS: u32 = 2u;
// Teaching faults: the parallel residual wired up wrong (r2 added twice, r1 dropped); the bias dropped.
override FAULT_WIRING: bool = false;
override FAULT_DROP_BIAS: bool = false;

fn gemm_w_row(n: u32) -> u32 {
  return n;
}

@compute @workgroup_size(GEMM_THREADS)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3u) {
  let block_m = wid.y * BM;
  let block_n = wid.x * BN;
  var tile = gemm_tile(block_m, block_n, lid, params.M, params.N, params.K);
  for (var i = 0u; i < TM; i++) {
    let m = block_m + gemm_row(lid, i);
    for (var j = 0u; j < TN; j++) {
      let n = block_n + gemm_col(lid, j);
      if (m < params.M && n < params.N) {
        let o = m * params.N + n;
        var out = tile[i * GEMM_TN_VECS + j / 4u][j % 4u];
        if (params.has_bias != 0u && !FAULT_DROP_BIAS) {
          out += b[n];
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
}
