// Linear layer for a few rows (a decode step: M = 1), PyTorch layout: y[M, N] = x[M, K] · W[N, K]^T + b[N] —
// the same arithmetic as reference/linear.wgsl: one thread owns each output, starts from 0.0 and adds
// x[m, k]·W[n, k] for k = 0, 1, … in order through acc(), over K rounded up to a multiple of 16 (the padding
// adds 0·0), then adds the bias and rounds once with st(). So y is bit-identical to reference/linear.wgsl's.
// What differs is the memory access: with one row, a 16 × 16 tile keeps 15 of 16 threads idle and waits on a
// load and two barriers every 16 k. Here a workgroup of WG threads owns NR output columns of one row (workgroup
// y = m) and walks K in steps of KC, double-buffered: while the first NR threads (of the first warp) add up
// step s from workgroup memory, 16 products per batch of loads, the threads past the first 32 stage step s + 1
// — W[n0 .. n0 + NR, k .. k + KC) coalesced along K (zeros outside), rows padded by one float so the summing
// threads hit distinct banks, and x[m, k .. k + KC). One barrier per step.
// x: [M, K], W: [N, K], b: [N] (ignored when has_bias = 0), y: [M, N].

// Params and bindings: reference/linear_io.wgsl (included before this file).

override WG: u32 = 256; // threads per workgroup (≥ 64: the first 32 sum, the rest stage)
override NR: u32 = 16;  // output columns per workgroup (≤ 32)
override KC: u32 = 112; // K per step (a multiple of 16)
override LOADERS: u32 = WG - 32u;
override ROW: u32 = KC + 1u; // a staged W row, padded
override W_PER: u32 = (NR * KC + LOADERS - 1u) / LOADERS; // W elements each stager loads per step
override X_PER: u32 = (KC + LOADERS - 1u) / LOADERS;

var<workgroup> ws: array<f32, 2u * NR * ROW>; // [buffer][n][k] of a step
var<workgroup> xs: array<f32, 2u * KC>;       // [buffer][k]

/** Stages step k0.. into buffer `buf` (called by the stagers: lid ≥ 32). */
fn stage(buf: u32, k0: u32, li: u32, m: u32, n0: u32) {
  let N = params.N;
  let K = params.K;
  for (var p = 0u; p < W_PER; p++) {
    let e = li + p * LOADERS;
    if (e < NR * KC) {
      let r = e / KC;
      let k = k0 + e % KC;
      var v = 0.0;
      if (n0 + r < N && k < K) { v = load_w((n0 + r) * K + k); }
      ws[buf * NR * ROW + r * ROW + e % KC] = v;
    }
  }
  for (var p = 0u; p < X_PER; p++) {
    let e = li + p * LOADERS;
    if (e < KC) {
      let k = k0 + e;
      var v = 0.0;
      if (k < K) { v = x[m * K + k]; }
      xs[buf * KC + e] = v;
    }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let lid = lid3.x;
  let m = wid.y;
  let n0 = wid.x * NR;
  let kPad = (params.K + 15u) / 16u * 16u; // the reference kernel's K loop length
  let steps = (kPad + KC - 1u) / KC;
  if (lid >= 32u) { stage(0u, 0u, lid - 32u, m, n0); }
  workgroupBarrier();
  var sum = 0.0;
  for (var s = 0u; s < steps; s++) {
    let cur = s % 2u;
    if (lid >= 32u) {
      if (s + 1u < steps) { stage(1u - cur, (s + 1u) * KC, lid - 32u, m, n0); }
    } else if (lid < NR) {
      let count = min(KC, kPad - s * KC); // a multiple of 16
      let wb = cur * NR * ROW + lid * ROW;
      let xb = cur * KC;
      for (var k = 0u; k < count; k += 16u) {
        var a: array<f32, 16>;
        var c: array<f32, 16>;
        for (var u = 0u; u < 16u; u++) {
          a[u] = xs[xb + k + u];
          c[u] = ws[wb + k + u];
        }
        for (var u = 0u; u < 16u; u++) { sum = acc(sum + a[u] * c[u]); }
      }
    }
    workgroupBarrier();
  }
  let n = n0 + lid;
  if (lid < NR && m < params.M && n < params.N) {
    var out = sum;
    if (params.has_bias != 0u) { out += b[n]; }
    y[m * params.N + n] = st(out);
  }
}
