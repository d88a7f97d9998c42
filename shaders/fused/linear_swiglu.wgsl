// Fused gate/up projection + SwiGLU (the Llama MLP's gate_proj, up_proj and act_fn(gate) * up in one GEMM):
// y[M, F] = silu(x · Wg^T + bg) · (x · Wu^T + bu), with W = [Wg; Wu] the two weights concatenated ([2F, K]: gate
// rows 0 .. F-1, then up rows F .. 2F-1) and b = [bg; bu] ([2F]). The GEMM runs over 2F virtual columns in which
// gate row f and up row f are neighbours (virtual 2f and 2f + 1, gemm_w_row()), so each thread's group of 4
// consecutive columns holds two whole (gate, up) pairs and the product needs no exchange; the split-K reduction
// runs the same epilogue. Bias and product in f32, each output rounded once by st().
// Teaching fault: FAULT_SWAP_GATE_UP takes silu of the up projection and multiplies by the gate (the two weights
// loaded the wrong way round).

struct Params { M: u32, N: u32, K: u32, k_chunk: u32, has_bias: u32 }

@group(0) @binding(0) var<uniform> params: Params;             // N = 2F virtual columns
@group(0) @binding(1) var<storage, read> b: array<f32>;       // [2F] = [bg; bu] (a dummy when has_bias = 0)
@group(0) @binding(2) var<storage, read_write> y: array<f32>; // [M, F]
const GEMM_IN: u32 = 3u; // x [M, K], w [2F, K], workspace: declared by the core / the reduction

override FAULT_SWAP_GATE_UP: bool = false;

/** Virtual column n -> its W row: 2f -> gate row f, 2f + 1 -> up row F + f. */
fn gemm_w_row(n: u32) -> u32 {
  return (n & 1u) * (params.N / 2u) + n / 2u;
}

/** Row m, virtual columns n .. n + 3 (two (gate, up) pairs) of x·W^T (f32 sums). */
fn gemm_epilogue(m: u32, n: u32, v: vec4f) {
  let F = params.N / 2u;
  for (var j = 0u; j < 4u; j += 2u) {
    let f = (n + j) / 2u;
    if (f >= F) {
      continue;
    }
    var g = v[j];
    var u = v[j + 1u];
    if (params.has_bias != 0u) {
      g += b[f];
      u += b[F + f];
    }
    y[m * F + f] = st(select(silu(g) * u, silu(u) * g, FAULT_SWAP_GATE_UP));
  }
}
