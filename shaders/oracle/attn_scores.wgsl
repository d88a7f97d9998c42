// Oracle attention scores in double-float: s[h, r, j] = (q[h, i] · k[h, j]) · scale for the query rows
// i = q0 + r (r < R) and j <= i, and 0 above the diagonal (the masked entries; the softmax reads only j <= i, and
// the tap shows them as 0). q, k: [H, T, hd] df; s: [H, R, T] df (q0 = 0, R = T: every row, [H, T, T]);
// scale = 1 / sqrt(hd) as a df value in the uniform (the CPU oracle's fp64 value). One thread per score; the dot
// product is a df sum of exact products, the same for a row whatever q0 and R.

struct Params { H: u32, T: u32, hd: u32, q0: u32, scale: vec2<f32>, R: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<vec2<f32>>;       // [H, T, hd] df
@group(0) @binding(2) var<storage, read> k: array<vec2<f32>>;       // [H, T, hd] df
@group(0) @binding(3) var<storage, read_write> s: array<vec2<f32>>; // [H, R, T] df

override DF_FMA: bool = true;
override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let T = params.T;
  let hd = params.hd;
  let R = params.R;
  let idx = gid.x + gid.y * nwg.x * WG; // [h, r, j]
  if (idx >= params.H * R * T) { return; }
  let j = idx % T;
  let i = params.q0 + (idx / T) % R;
  let h = idx / (R * T);
  if (j > i) {
    s[idx] = vec2<f32>(0.0, 0.0);
    return;
  }
  let qo = (h * T + i) * hd;
  let ko = (h * T + j) * hd;
  var acc = vec2<f32>(0.0, 0.0);
  for (var e = 0u; e < hd; e++) { acc = df_add(acc, df_mul(q[qo + e], k[ko + e])); }
  s[idx] = df_mul(acc, params.scale);
}
