// Oracle attention-weighted values in double-float: ctx[i, h·hd + e] = Σ_{j <= i} p[h, i, j] · v[h, j, e]
// (HF's permute + reshape to [T, d]). p: [H, T, T] df (causal: only j <= i read); v: [H, T, hd] df;
// ctx: [T, H·hd] df. One thread per output; the sum is a df sum of df products.

struct Params { H: u32, T: u32, hd: u32, _pad: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> p: array<vec2<f32>>;         // [H, T, T] df
@group(0) @binding(2) var<storage, read> v: array<vec2<f32>>;         // [H, T, hd] df
@group(0) @binding(3) var<storage, read_write> ctx: array<vec2<f32>>; // [T, H·hd] df

override DF_FMA: bool = true;
override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let H = params.H;
  let T = params.T;
  let hd = params.hd;
  let d = H * hd;
  let idx = gid.x + gid.y * nwg.x * WG; // [i, h, e] = ctx's row-major index
  if (idx >= T * d) { return; }
  let e = idx % hd;
  let h = (idx / hd) % H;
  let i = idx / d;
  let row = (h * T + i) * T;
  var acc = vec2<f32>(0.0, 0.0);
  for (var j = 0u; j <= i; j++) { acc = df_add(acc, df_mul(p[row + j], v[(h * T + j) * hd + e])); }
  ctx[idx] = acc;
}
