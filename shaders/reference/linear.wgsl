// Linear layer, PyTorch layout: y[M, N] = x[M, K] · W[N, K]^T + b[N].
// Shared-memory tiling, one output per thread: each workgroup stages a TILE×TILE block of x and of W
// (both read along K, so loads are coalesced) and accumulates over K in TILE steps.
// x: [M, K], W: [N, K], b: [N] (ignored when has_bias = 0), y: [M, N].

// Params and bindings: reference/linear_io.wgsl (included before this file).

override TILE: u32 = 16;
var<workgroup> xs: array<f32, TILE * TILE>; // [m, k] of the tile
var<workgroup> ws: array<f32, TILE * TILE>; // [n, k] of the tile

@compute @workgroup_size(TILE, TILE)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let m = wid.y * TILE + lid.y;
  let n = wid.x * TILE + lid.x;
  let wn = wid.x * TILE + lid.y; // the W row this thread stages
  var sum = 0.0;
  for (var k0 = 0u; k0 < params.K; k0 += TILE) {
    let k = k0 + lid.x;
    var xv = 0.0;
    if (m < params.M && k < params.K) { xv = x[m * params.K + k]; }
    xs[lid.y * TILE + lid.x] = xv;
    var wv = 0.0;
    if (wn < params.N && k < params.K) { wv = load_w(wn * params.K + k); }
    ws[lid.y * TILE + lid.x] = wv;
    workgroupBarrier();
    for (var kk = 0u; kk < TILE; kk++) {
      sum = acc(sum + xs[lid.y * TILE + kk] * ws[lid.x * TILE + kk]);
    }
    workgroupBarrier();
  }
  if (m < params.M && n < params.N) {
    var out = sum;
    if (params.has_bias != 0u) { out += b[n]; }
    y[m * params.N + n] = st(out);
  }
}
