// Causal attention scores per head: s[h, i, j] = (q[h, i, :] · k[h, j, :]) · scale for j <= i, 0 above the
// diagonal (masked: the softmax never reads it). q, k: [H, T, hd], s: [H, T, T]. Tiled like the linear
// kernel: a TILE×TILE block of (i, j) per workgroup, one head per workgroup z.

struct Params { T: u32, hd: u32, scale: f32, _pad: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;       // [H, T, hd]
@group(0) @binding(2) var<storage, read> k: array<f32>;       // [H, T, hd]
@group(0) @binding(3) var<storage, read_write> s: array<f32>; // [H, T, T]

override TILE: u32 = 16;
var<workgroup> qs: array<f32, TILE * TILE>; // [i, e]
var<workgroup> ks: array<f32, TILE * TILE>; // [j, e]

@compute @workgroup_size(TILE, TILE)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let T = params.T;
  let hd = params.hd;
  let h = wid.z;
  let i = wid.y * TILE + lid.y;
  let j = wid.x * TILE + lid.x;
  let kj = wid.x * TILE + lid.y; // the k row this thread stages
  let base = h * T * hd;
  var sum = 0.0;
  for (var e0 = 0u; e0 < hd; e0 += TILE) {
    let e = e0 + lid.x;
    var qv = 0.0;
    if (i < T && e < hd) { qv = q[base + i * hd + e]; }
    qs[lid.y * TILE + lid.x] = qv;
    var kv = 0.0;
    if (kj < T && e < hd) { kv = k[base + kj * hd + e]; }
    ks[lid.y * TILE + lid.x] = kv;
    workgroupBarrier();
    for (var ee = 0u; ee < TILE; ee++) {
      sum = acc(sum + qs[lid.y * TILE + ee] * ks[lid.x * TILE + ee]);
    }
    workgroupBarrier();
  }
  if (i < T && j < T) {
    var out = 0.0;
    if (j <= i) { out = sum * params.scale; }
    s[(h * T + i) * T + j] = st(out);
  }
}
