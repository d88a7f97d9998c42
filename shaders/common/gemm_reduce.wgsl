// Split-K reduction of the fused GEMM: sums the S partial tiles that common/gemm_core.wgsl wrote with
// GEMM_SPLIT and hands the sum to the kernel file's epilogue — the same gemm_epilogue() the unsplit GEMM
// calls, so bias, activation, residual and the single st() rounding happen exactly as there.
//
// Contract with the kernel file: as in common/gemm_core.wgsl (params begins with M, N, K, k_chunk; the kernel
// file's bindings, then `const GEMM_IN`; gemm_epilogue(m, n, v) for row m, columns n .. n + 3). Here GEMM_IN
// is the workspace, read-only. S = ceil(K / k_chunk).
// Numerics: the partials are added in split order s = 0, 1, .., S − 1, each step through acc() (so fp16
// accumulation stays fp16 accumulation: a real fp16-accumulating split-K kernel rounds here too); storage
// rounding (st) happens once, in the epilogue, never on a partial.
// Grid: (ceil(ceil(N / 4) / GEMM_REDUCE_WG), M) workgroups; one thread per row and 4-column group.

@group(0) @binding(GEMM_IN) var<storage, read> gemm_part: array<f32>; // [S, M, N] raw partial sums

override GEMM_REDUCE_WG: u32 = 64u;

const GEMM_NONE: u32 = 0xffffffffu;

@compute @workgroup_size(GEMM_REDUCE_WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let M = params.M;
  let N = params.N;
  let n = gid.x * 4u;
  let m = gid.y;
  if (n >= N || m >= M) {
    return;
  }
  let S = (params.K + params.k_chunk - 1u) / params.k_chunk;
  var v = vec4f(0.0);
  for (var s = 0u; s < S; s++) {
    let o = (s * M + m) * N + n;
    for (var c = 0u; c < 4u; c++) {
      if (n + c < N) {
        v[c] = acc(v[c] + gemm_part[o + c]);
      }
    }
  }
  gemm_epilogue(m, n, v);
}
