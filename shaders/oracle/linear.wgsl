// Oracle linear layer in double-float: y[M, N] = x[M, K] · W[N, K]^T (+ b[N]), PyTorch nn.Linear layout.
// x, y: df tensors (vec2: hi, lo); W: the weights as the engine stores them (f32 bits or packed f16, load_w:
// exact in the hi part); b: f32. Every product is formed exactly (two_prod) and summed in df.
//
// Tiling: a workgroup of WG_X × WG_Y threads (16 × 16 by default) computes a BM × BN block of y, each thread a
// TM × TN register tile (TM, TN ∈ {1, 2}; rows ty + WG_Y·i, columns tx + WG_X·j; 2 × 2 by default: 32 × 32).
// Per K step of BK, the block's x rows (df) and W rows are staged k-major in workgroup memory, loads coalesced
// along K and bounds-checked (zeros outside). The tile shape changes only which thread computes an output, never
// its arithmetic: every shape gives the same bits.
// Summation is blocked: each BK step's products are summed into a fresh df partial, which is then added to
// the running total (error growth ~ sqrt(BK) + sqrt(K / BK) roundings of df instead of sqrt(K)).
// Bias as the CPU oracle adds it: total + b[n].

struct Params { M: u32, N: u32, K: u32, has_bias: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec2<f32>>;       // [M, K] df
@group(0) @binding(2) var<storage, read> w: array<u32>;             // [N, K] f32 bits or packed f16 (load_w)
@group(0) @binding(3) var<storage, read> b: array<f32>;             // [N] (ignored when has_bias = 0)
@group(0) @binding(4) var<storage, read_write> y: array<vec2<f32>>; // [M, N] df

override DF_FMA: bool = true;
override BK: u32 = 16; // K per staging step

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;
override TM: u32 = 2u; // rows per thread (1 or 2)
override TN: u32 = 2u; // columns per thread (1 or 2)
override THREADS: u32 = WG_X * WG_Y;
override BM: u32 = WG_Y * TM; // rows of x per workgroup
override BN: u32 = WG_X * TN; // rows of W (output columns) per workgroup

var<workgroup> xs: array<vec2<f32>, BK * BM>; // [k][m] of the block
var<workgroup> ws: array<f32, BK * BN>;       // [k][n] of the block

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let M = params.M;
  let N = params.N;
  let K = params.K;
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let flat = lid.y * WG_X + lid.x;
  var acc: array<vec2<f32>, 4>;  // [i * 2 + j]: running totals
  var part: array<vec2<f32>, 4>; // [i * 2 + j]: this K step's sum
  for (var t = 0u; t < 4u; t++) {
    acc[t] = vec2<f32>(0.0, 0.0);
    part[t] = vec2<f32>(0.0, 0.0);
  }
  for (var k0 = 0u; k0 < K; k0 += BK) {
    // Stage x[m0.., k0..k0+BK) and W[n0.., k0..k0+BK), THREADS elements at a time.
    for (var e = flat; e < BM * BK; e += THREADS) {
      let r = e / BK;
      let kk = e % BK;
      let k = k0 + kk;
      var xv = vec2<f32>(0.0, 0.0);
      if (m0 + r < M && k < K) { xv = x[(m0 + r) * K + k]; }
      xs[kk * BM + r] = xv;
    }
    for (var e = flat; e < BN * BK; e += THREADS) {
      let r = e / BK;
      let kk = e % BK;
      let k = k0 + kk;
      var wv = 0.0;
      if (n0 + r < N && k < K) { wv = load_w((n0 + r) * K + k); }
      ws[kk * BN + r] = wv;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      var xv: array<vec2<f32>, 2>;
      var wv: array<f32, 2>;
      for (var i = 0u; i < TM; i++) { xv[i] = xs[kk * BM + lid.y + i * WG_Y]; }
      for (var j = 0u; j < TN; j++) { wv[j] = ws[kk * BN + lid.x + j * WG_X]; }
      for (var i = 0u; i < TM; i++) {
        for (var j = 0u; j < TN; j++) {
          part[i * 2u + j] = df_add(part[i * 2u + j], df_mul_f(xv[i], wv[j]));
        }
      }
    }
    for (var t = 0u; t < 4u; t++) {
      acc[t] = df_add(acc[t], part[t]);
      part[t] = vec2<f32>(0.0, 0.0);
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < TM; i++) {
    let m = m0 + lid.y + i * WG_Y;
    for (var j = 0u; j < TN; j++) {
      let n = n0 + lid.x + j * WG_X;
      if (m < M && n < N) {
        var out = acc[i * 2u + j];
        if (params.has_bias != 0u) { out = df_add_f(out, b[n]); }
        y[m * N + n] = out;
      }
    }
  }
}
