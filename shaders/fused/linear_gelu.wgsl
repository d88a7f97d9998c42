// Fused linear + exact GELU (the MLP's dense_h_to_4h + act): y[M, N] = gelu_exact(x[M, K] · W[N, K]^T + b[N])
// on the shared GEMM core (common/gemm_core.wgsl); bias and GELU in f32, each output rounded once by st().
// Grid: (ceil(N / BN), ceil(M / BM)) workgroups of GEMM_THREADS threads.
// Fault switch (src/run/faults.ts): FAULT_RELU applies ReLU instead of GELU — the wrong module.

struct Params { M: u32, N: u32, K: u32, has_bias: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;       // [M, K]
@group(0) @binding(2) var<storage, read> w: array<u32>;       // f32 bits or packed f16 (load_w), [N, K]
@group(0) @binding(3) var<storage, read> b: array<f32>;       // [N] (a dummy when has_bias = 0)
@group(0) @binding(4) var<storage, read_write> y: array<f32>; // [M, N]

override FAULT_RELU: bool = false;

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
        var z = tile[i * GEMM_TN_VECS + j / 4u][j % 4u];
        if (params.has_bias != 0u) {
          z += b[n];
        }
        y[m * params.N + n] = st(select(gelu_exact(z), max(z, 0.0), FAULT_RELU));
      }
    }
  }
}
