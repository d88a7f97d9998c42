// The split-K partial GEMM (see common/gemm_core.wgsl): split s of the K range stores its raw sums of row m,
// columns n .. n + 3 into the workspace; common/gemm_reduce.wgsl adds the splits and runs the epilogue.
const GEMM_SPLIT: bool = true;

@group(0) @binding(GEMM_IN + 2u) var<storage, read_write> gemm_part: array<f32>; // [S, M, N] raw partial sums

fn gemm_store_partial(s: u32, m: u32, n: u32, v: vec4f) {
  let o = (s * params.M + m) * params.N + n;
  for (var c = 0u; c < 4u; c++) {
    if (n + c < params.N) {
      gemm_part[o + c] = v[c];
    }
  }
}
