// The fused GEMM without workgroup memory or barriers, for CPU adapters (SwiftShader, where a barrier makes
// every invocation of a workgroup yield in turn): one thread computes rows m0 .. m0 + 3, tile columns n .. n + 3
// (four vec4 accumulators, every index a constant so they stay in registers) and hands each row to the kernel
// file's epilogue, or (with common/gemm_split.wgsl) stores it as split wid.z's partial.
// Contract with the kernel file: exactly common/gemm_core.wgsl's (params, GEMM_IN, gemm_w_row, gemm_epilogue).
//
// Numerics: the same bits as the tiled core, by construction. There each output is one thread's register,
// started at +0 and advanced by gemm_fma() for k = k_begin, k_begin + 1, … over the split's range rounded up to
// a multiple of BK; x is read at k + 2 under FAULT_TILE_OFFSET, and every load outside [0, K) (or of a
// GEMM_NONE column) is 0. Here the same gemm_fma() steps run in the same order with the same values; the
// padding past K adds only +0 · +0, which changes nothing but a −0 sum into +0, and that is done once at the
// end (select, so no compiler can drop it as an addition of zero).
// Grid: (ceil(ceil(N / 4) / GEMM_PLAIN_WG), ceil(M / 4), S) workgroups.

// The x and W bindings, the tiled core's constants and GEMM_NONE: common/gemm_io.wgsl.
override GEMM_PLAIN_WG: u32 = 64;

/** One accumulate step of 4 outputs: s + a·b, each through acc() (as common/gemm_core.wgsl's). */
fn gemm_fma(s: vec4f, a: f32, b: vec4f) -> vec4f {
  let t = s + a * b;
  return vec4f(acc(t.x), acc(t.y), acc(t.z), acc(t.w));
}

/** Hands row m's four sums to the epilogue or the split workspace (rows past M are not written). */
fn plain_out(s: u32, m: u32, n: u32, v: vec4f) {
  if (m >= params.M) {
    return;
  }
  if (GEMM_SPLIT) {
    gemm_store_partial(s, m, n, v);
  } else {
    gemm_epilogue(m, n, v);
  }
}

@compute @workgroup_size(GEMM_PLAIN_WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let M = params.M;
  let N = params.N;
  let K = params.K;
  let n = gid.x * 4u;
  let m0 = wid.y * 4u;
  if (m0 >= M || n >= N) {
    return;
  }
  let k_begin = wid.z * params.k_chunk;
  let k_end = min(K, k_begin + params.k_chunk);
  // The W rows of the four columns; a padding column (GEMM_NONE, or past N) reads row 0 and selects 0 instead.
  var rows = array<u32, 4>(GEMM_NONE, GEMM_NONE, GEMM_NONE, GEMM_NONE);
  for (var c = 0u; c < 4u; c++) {
    if (n + c < N) {
      rows[c] = gemm_w_row(n + c);
    }
  }
  let none = vec4<bool>(rows[0] == GEMM_NONE, rows[1] == GEMM_NONE, rows[2] == GEMM_NONE, rows[3] == GEMM_NONE);
  let w0 = select(rows[0], 0u, none.x) * K;
  let w1 = select(rows[1], 0u, none.y) * K;
  let w2 = select(rows[2], 0u, none.z) * K;
  let w3 = select(rows[3], 0u, none.w) * K;
  // Rows past M repeat the last row (valid memory) and are not written.
  let x0 = m0 * K;
  let x1 = min(m0 + 1u, M - 1u) * K;
  let x2 = min(m0 + 2u, M - 1u) * K;
  let x3 = min(m0 + 3u, M - 1u) * K;
  // x is read at k + shift (the tile-offset fault); past K it is 0, as the tiled core stages it.
  let shift = select(0u, 2u, FAULT_TILE_OFFSET);
  let k_x = max(k_begin, min(k_end, K - min(K, shift))); // k from here on reads x = 0
  var s0 = vec4f();
  var s1 = vec4f();
  var s2 = vec4f();
  var s3 = vec4f();
  for (var k = k_begin; k < k_end; k++) {
    let b = select(vec4f(load_w(w0 + k), load_w(w1 + k), load_w(w2 + k), load_w(w3 + k)), vec4f(), none);
    let j = k + shift;
    var a = vec4f();
    if (k < k_x) {
      a = vec4f(x[x0 + j], x[x1 + j], x[x2 + j], x[x3 + j]);
    }
    s0 = gemm_fma(s0, a.x, b);
    s1 = gemm_fma(s1, a.y, b);
    s2 = gemm_fma(s2, a.z, b);
    s3 = gemm_fma(s3, a.w, b);
  }
  if ((k_end - k_begin) % BK != 0u) {
    s0 = select(s0, vec4f(), s0 == vec4f());
    s1 = select(s1, vec4f(), s1 == vec4f());
    s2 = select(s2, vec4f(), s2 == vec4f());
    s3 = select(s3, vec4f(), s3 == vec4f());
  }
  plain_out(wid.z, m0, n, s0);
  plain_out(wid.z, m0 + 1u, n, s1);
  plain_out(wid.z, m0 + 2u, n, s2);
  plain_out(wid.z, m0 + 3u, n, s3);
}
