// Causal attention scores per head: s[h, i, j] = (q[h, i, :] · k[h, j, :]) · scale for j <= i, 0 above the
// diagonal (masked: the softmax never reads it). q, k: [H, T, hd], s: [H, T, T]. Tiled like the linear
// kernel: a TILE×TILE block of (i, j) per workgroup, one head per workgroup z.
// Positions (KV-cache decoding): query row i is the token at position p0 + i and sees keys j <= p0 + i of
// k: [H, KT, hd] (the cache); s is [H, T, Tk] with Tk = p0 + T keys. A whole forward is p0 = 0, KT = T. Each
// score sums over e in the same order whatever p0 is, so a decoded row equals that row of a whole forward.
// The Llama family: KV_GROUP > 1 is grouped-query attention (k is [H / KV_GROUP, KT, hd]; query head h reads KV
// head h / KV_GROUP, HF's repeat_kv); WINDOW > 0 a sliding window (key j visible to the query at position p iff
// j <= p and p - j < WINDOW). The defaults (1, 0) are GPT-NeoX's kernel, bit for bit.

struct Params { T: u32, hd: u32, scale: f32, p0: u32, KT: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;       // [H, T, hd]
@group(0) @binding(2) var<storage, read> k: array<f32>;       // [H, KT, hd]
@group(0) @binding(3) var<storage, read_write> s: array<f32>; // [H, T, Tk], Tk = p0 + T

override TILE: u32 = 16;
override KV_GROUP: u32 = 1u;
override WINDOW: u32 = 0u;

fn visible(j: u32, pos: u32) -> bool {
  return j <= pos && (WINDOW == 0u || pos - j < WINDOW);
}
// CPU adapters (SwiftShader): each thread sums its score straight from q and k, no staging and no barrier. The
// same products in the same order; the tile's padding of hd adds 0·0, which changes nothing but a −0 sum into +0
// (done once, by select). So the bits are the tiled kernel's.
override PLAIN: bool = false;
var<workgroup> qs: array<f32, TILE * TILE>; // [i, e]
var<workgroup> ks: array<f32, TILE * TILE>; // [j, e]

@compute @workgroup_size(TILE, TILE)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let T = params.T;
  let Tk = params.p0 + T; // keys 0 .. Tk - 1
  let hd = params.hd;
  let h = wid.z;
  let i = wid.y * TILE + lid.y; // query row (position p0 + i)
  let j = wid.x * TILE + lid.x; // key
  let kj = wid.x * TILE + lid.y; // the k row this thread stages
  let base = h * T * hd;
  let kbase = (h / KV_GROUP) * params.KT * hd;
  if (PLAIN) {
    if (i < T && j < Tk) {
      var out = 0.0;
      if (visible(j, params.p0 + i)) {
        var acc_s = 0.0;
        for (var e = 0u; e < hd; e++) {
          acc_s = acc(acc_s + q[base + i * hd + e] * k[kbase + j * hd + e]);
        }
        if (hd % TILE != 0u) { acc_s = select(acc_s, 0.0, acc_s == 0.0); }
        out = acc_s * params.scale;
      }
      s[(h * T + i) * Tk + j] = st(out);
    }
    return;
  }
  var sum = 0.0;
  for (var e0 = 0u; e0 < hd; e0 += TILE) {
    let e = e0 + lid.x;
    var qv = 0.0;
    if (i < T && e < hd) { qv = q[base + i * hd + e]; }
    qs[lid.y * TILE + lid.x] = qv;
    var kv = 0.0;
    if (kj < Tk && e < hd) { kv = k[kbase + kj * hd + e]; }
    ks[lid.y * TILE + lid.x] = kv;
    workgroupBarrier();
    for (var ee = 0u; ee < TILE; ee++) {
      sum = acc(sum + qs[lid.y * TILE + ee] * ks[lid.x * TILE + ee]);
    }
    workgroupBarrier();
  }
  if (i < T && j < Tk) {
    var out = 0.0;
    if (visible(j, params.p0 + i)) { out = sum * params.scale; }
    s[(h * T + i) * Tk + j] = st(out);
  }
}
