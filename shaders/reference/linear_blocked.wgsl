// Linear layer, PyTorch layout: y[M, N] = x[M, K] · W[N, K]^T + b[N] — the same arithmetic as
// reference/linear.wgsl, register-blocked for speed. Every output is summed exactly as there: one thread owns
// it, starts from 0.0 and adds x[m, k]·W[n, k] for k = 0, 1, … in order through acc(), over K rounded up to a
// multiple of 16 (the padding adds 0·0), then adds the bias and rounds once with st(). So y is bit-identical to
// reference/linear.wgsl's; only who loads what, and when, differs.
// A workgroup of TX × TY threads computes a BM × BN block (BM = 4·TY, BN = 4·TX), each thread a 4 × 4 register
// tile: rows 4·ty .. 4·ty + 3, columns 4·tx .. 4·tx + 3. Per K step of 16 the block's x rows and W rows are
// staged k-major in workgroup memory (global loads coalesced along K, zeros outside), rows padded by 4 floats
// so the transposing stores spread over the banks; a thread then reads one vec4 of x and one of W per k.
// x: [M, K], W: [N, K], b: [N] (ignored when has_bias = 0), y: [M, N].

// Params and bindings: reference/linear_io.wgsl (included before this file).

override TX: u32 = 16; // threads along N
override TY: u32 = 16; // threads along M
const BK: u32 = 16u;   // K per staging step: the reference kernel's TILE (same padded length of K)
override BM: u32 = 4u * TY;
override BN: u32 = 4u * TX;
override XS_ROW: u32 = BM / 4u + 1u; // vec4s per staged k-row of x (one vec4 of padding)
override WS_ROW: u32 = BN / 4u + 1u;

var<workgroup> xs: array<vec4f, BK * XS_ROW>; // [k][m / 4] of the block
var<workgroup> ws: array<vec4f, BK * WS_ROW>; // [k][n / 4] of the block

@compute @workgroup_size(TX, TY)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let M = params.M;
  let N = params.N;
  let K = params.K;
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let flat = lid.y * TX + lid.x;
  let threads = TX * TY;
  var sum: array<vec4f, 4>; // [i][j]: row 4·ty + i, column 4·tx + j
  for (var i = 0u; i < 4u; i++) { sum[i] = vec4f(0.0); }
  for (var k0 = 0u; k0 < K; k0 += BK) {
    // Stage x[m0.., k0..k0+16) and W[n0.., k0..k0+16): consecutive threads read consecutive k of one row.
    for (var e = flat; e < BM * BK; e += threads) {
      let r = e / BK;
      let k = k0 + e % BK;
      var v = 0.0;
      if (m0 + r < M && k < K) { v = x[(m0 + r) * K + k]; }
      xs[(e % BK) * XS_ROW + r / 4u][r % 4u] = v;
    }
    for (var e = flat; e < BN * BK; e += threads) {
      let r = e / BK;
      let k = k0 + e % BK;
      var v = 0.0;
      if (n0 + r < N && k < K) { v = load_w((n0 + r) * K + k); }
      ws[(e % BK) * WS_ROW + r / 4u][r % 4u] = v;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      let xv = xs[kk * XS_ROW + lid.y];
      let wv = ws[kk * WS_ROW + lid.x];
      for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) {
          sum[i][j] = acc(sum[i][j] + xv[i] * wv[j]);
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let m = m0 + 4u * lid.y + i;
    for (var j = 0u; j < 4u; j++) {
      let n = n0 + 4u * lid.x + j;
      if (m < M && n < N) {
        var out = sum[i][j];
        if (params.has_bias != 0u) { out += b[n]; }
        y[m * N + n] = st(out);
      }
    }
  }
}
