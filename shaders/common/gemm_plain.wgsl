// The fused GEMM without workgroup memory or barriers, for CPU adapters (SwiftShader, where a barrier makes
// every invocation of a workgroup yield in turn): one thread computes row m, tile columns n .. n + 3 and hands
// them to the kernel file's epilogue, or (with common/gemm_split.wgsl) stores them as split wid.z's partial.
// Contract with the kernel file: exactly common/gemm_core.wgsl's (params, GEMM_IN, gemm_w_row, gemm_epilogue).
//
// Numerics: the same bits as the tiled core, by construction. There each output is one thread's register,
// started at +0 and advanced by gemm_fma() for k = k_begin, k_begin + 1, … over the split's range rounded up to
// a multiple of BK; x is read at k + 2 under FAULT_TILE_OFFSET, and every load outside [0, K) (or of a
// GEMM_NONE column) is 0. Here the same gemm_fma() steps run in the same order with the same values; the
// padding past K adds only +0 · +0, which changes nothing but a −0 sum into +0, and that is done once at the
// end (select, so no compiler can drop it as an addition of zero).
// Grid: (ceil(ceil(N / 4) / GEMM_PLAIN_WG), M, S) workgroups.

@group(0) @binding(GEMM_IN) var<storage, read> x: array<f32>; // [M, K]
@group(0) @binding(GEMM_IN + 1u) var<storage, read> w: array<u32>; // f32 bits or packed f16 (load_w), rows of K

// The tiled core's constants: BK decides the padding; the others are accepted so that a launch's constants
// bind to either core.
override BM: u32 = 128;
override BN: u32 = 128;
override BK: u32 = 8;
override TM: u32 = 8;
override TN: u32 = 8;
override GEMM_BUFS: u32 = 1;
override FAULT_TILE_OFFSET: bool = false;
override GEMM_PLAIN_WG: u32 = 64;

const GEMM_NONE: u32 = 0xffffffffu;

/** One accumulate step of 4 outputs: s + a·b, each through acc() (as common/gemm_core.wgsl's). */
fn gemm_fma(s: vec4f, a: f32, b: vec4f) -> vec4f {
  let t = s + a * b;
  return vec4f(acc(t.x), acc(t.y), acc(t.z), acc(t.w));
}

@compute @workgroup_size(GEMM_PLAIN_WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let M = params.M;
  let N = params.N;
  let K = params.K;
  let n = gid.x * 4u;
  let m = wid.y;
  if (m >= M || n >= N) {
    return;
  }
  let k_begin = wid.z * params.k_chunk;
  let k_end = min(K, k_begin + params.k_chunk);
  var rows: array<u32, 4>;
  for (var c = 0u; c < 4u; c++) {
    rows[c] = GEMM_NONE;
    if (n + c < N) {
      rows[c] = gemm_w_row(n + c);
    }
  }
  let shift = select(0u, 2u, FAULT_TILE_OFFSET);
  var sum = vec4f();
  for (var k = k_begin; k < k_end; k++) {
    var a = 0.0;
    if (k + shift < K) {
      a = x[m * K + k + shift];
    }
    var b = vec4f();
    for (var c = 0u; c < 4u; c++) {
      if (rows[c] != GEMM_NONE) {
        b[c] = load_w(rows[c] * K + k);
      }
    }
    sum = gemm_fma(sum, a, b);
  }
  if ((k_end - k_begin) % BK != 0u) {
    sum = select(sum, vec4f(), sum == vec4f());
  }
  if (GEMM_SPLIT) {
    gemm_store_partial(wid.z, m, n, sum);
  } else {
    gemm_epilogue(m, n, sum);
  }
}
