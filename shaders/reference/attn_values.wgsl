// Weighted values, heads merged back: ctx[i, h*hd + e] = Σ_{j<=i} p[h, i, j] · v[h, j, e].
// p: [H, T, T] (zero above the diagonal), v: [H, T, hd], ctx: [T, H*hd]. Tiled matmul per head
// (workgroup z = head), the j loop stops at the tile's last causal column.
// Positions (KV-cache decoding): row i is the query at position p0 + i; p is [H, T, Tk] (Tk = p0 + T keys),
// v is [H, KT, hd] (the cache). A whole forward is p0 = 0, KT = T. A row sums the same products in the same
// order (j ascending) whatever p0 is; only the count of trailing zero products (p = 0 past the row's position)
// differs, which leaves a finite sum unchanged.
// KV_GROUP > 1 (grouped-query attention, the Llama family): v is [H / KV_GROUP, KT, hd] and query head h reads KV
// head h / KV_GROUP; the default 1 is GPT-NeoX's kernel, bit for bit. A sliding window needs nothing here: its
// masked probabilities are 0.

struct Params { T: u32, hd: u32, H: u32, p0: u32, KT: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> p: array<f32>;         // [H, T, Tk], Tk = p0 + T
@group(0) @binding(2) var<storage, read> v: array<f32>;         // [H, KT, hd]
@group(0) @binding(3) var<storage, read_write> ctx: array<f32>; // [T, H*hd]

override TILE: u32 = 16;
override KV_GROUP: u32 = 1u;
// CPU adapters (SwiftShader): each thread sums its output straight from p and v, no staging and no barrier, over
// exactly the j the tile runs (0 .. its padded causal end, zeros past Tk): the same products in the same order,
// so the bits are the tiled kernel's.
override PLAIN: bool = false;
var<workgroup> ps: array<f32, TILE * TILE>; // [i, j]
var<workgroup> vs: array<f32, TILE * TILE>; // [j, e]

@compute @workgroup_size(TILE, TILE)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let T = params.T;
  let Tk = params.p0 + T;
  let hd = params.hd;
  let h = wid.z;
  let i = wid.y * TILE + lid.y;
  let e = wid.x * TILE + lid.x;
  let jEnd = min(Tk, params.p0 + (wid.y + 1u) * TILE); // causal: rows of this tile need j < jEnd
  if (PLAIN) {
    if (i < T && e < hd) {
      let jPad = (jEnd + TILE - 1u) / TILE * TILE;
      var acc_s = 0.0;
      for (var j = 0u; j < jPad; j++) {
        var pv = 0.0;
        var vv = 0.0;
        if (j < Tk) {
          pv = p[(h * T + i) * Tk + j];
          vv = v[((h / KV_GROUP) * params.KT + j) * hd + e];
        }
        acc_s = acc(acc_s + pv * vv);
      }
      ctx[i * params.H * hd + h * hd + e] = st(acc_s);
    }
    return;
  }
  var sum = 0.0;
  for (var j0 = 0u; j0 < jEnd; j0 += TILE) {
    let jp = j0 + lid.x;
    var pv = 0.0;
    if (i < T && jp < Tk) { pv = p[(h * T + i) * Tk + jp]; }
    ps[lid.y * TILE + lid.x] = pv;
    let jv = j0 + lid.y;
    var vv = 0.0;
    if (jv < Tk && e < hd) { vv = v[((h / KV_GROUP) * params.KT + jv) * hd + e]; }
    vs[lid.y * TILE + lid.x] = vv;
    workgroupBarrier();
    for (var jj = 0u; jj < TILE; jj++) {
      sum = acc(sum + ps[lid.y * TILE + jj] * vs[jj * TILE + lid.x]);
    }
    workgroupBarrier();
  }
  if (i < T && e < hd) {
    ctx[i * params.H * hd + h * hd + e] = st(sum);
  }
}
