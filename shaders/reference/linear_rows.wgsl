// Linear layer for a few rows (a decode step: M = 1), PyTorch layout: y[M, N] = x[M, K] · W[N, K]^T + b[N] —
// the same arithmetic as reference/linear.wgsl: one thread owns each output, starts from 0.0 and adds
// x[m, k]·W[n, k] for k = 0, 1, … in order through acc(), over K rounded up to a multiple of 16 (the padding
// adds 0·0), then adds the bias and rounds once with st(). So y is bit-identical to reference/linear.wgsl's.
// What differs is the memory access: with one row, a 16 × 16 tile keeps 15 of 16 threads idle and loads 16
// weights per step. Here a workgroup of WG threads owns NR output columns of one row (workgroup y = m): per
// step of KC, all WG threads stage W[n0 .. n0 + NR, k0 .. k0 + KC) (coalesced along K, zeros outside; rows
// padded by one float so the NR summing threads hit distinct banks) and x[m, k0 .. k0 + KC), then the first
// NR threads each add their row's KC products in order.
// x: [M, K], W: [N, K], b: [N] (ignored when has_bias = 0), y: [M, N].

struct Params { M: u32, N: u32, K: u32, has_bias: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;       // [M, K]
@group(0) @binding(2) var<storage, read> w: array<u32>;       // f32 bits or packed f16 (load_w), [N, K]
@group(0) @binding(3) var<storage, read> b: array<f32>;       // [N]
@group(0) @binding(4) var<storage, read_write> y: array<f32>; // [M, N]

override WG: u32 = 128; // threads per workgroup (≥ NR)
override NR: u32 = 8;   // output columns per workgroup
override KC: u32 = 256; // K per staging step (a multiple of 16)

var<workgroup> ws: array<f32, NR * (KC + 1u)>; // [n][k] of the step, rows padded by one
var<workgroup> xs: array<f32, KC>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let M = params.M;
  let N = params.N;
  let K = params.K;
  let lid = lid3.x;
  let m = wid.y;
  let n0 = wid.x * NR;
  let kPad = (K + 15u) / 16u * 16u; // the reference kernel's K loop length
  var sum = 0.0;
  for (var k0 = 0u; k0 < kPad; k0 += KC) {
    for (var e = lid; e < NR * KC; e += WG) {
      let r = e / KC;
      let k = k0 + e % KC;
      var v = 0.0;
      if (n0 + r < N && k < K) { v = load_w((n0 + r) * K + k); }
      ws[r * (KC + 1u) + e % KC] = v;
    }
    for (var e = lid; e < KC; e += WG) {
      let k = k0 + e;
      var v = 0.0;
      if (m < M && k < K) { v = x[m * K + k]; }
      xs[e] = v;
    }
    workgroupBarrier();
    if (lid < NR) {
      let steps = min(KC, kPad - k0);
      for (var kk = 0u; kk < steps; kk++) {
        sum = acc(sum + xs[kk] * ws[lid * (KC + 1u) + kk]);
      }
    }
    workgroupBarrier();
  }
  let n = n0 + lid;
  if (lid < NR && m < M && n < N) {
    var out = sum;
    if (params.has_bias != 0u) { out += b[n]; }
    y[m * N + n] = st(out);
  }
}
