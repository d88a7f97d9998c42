// Oracle attention-weighted values in double-float: ctx[r, h·hd + e] = Σ_{j <= i} p[h, r, j] · v[h, j, e] for the
// query rows i = q0 + r (r < R; q0 = 0, R = T: every row) (HF's permute + reshape to [R, d]). p: [H, R, T] df
// (causal: only j <= i read); v: [H, T, hd] df; ctx: [R, H·hd] df. One thread per output; the sum is a df sum of
// df products, the same for a row whatever q0 and R.

struct Params { H: u32, T: u32, hd: u32, q0: u32, R: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> p: array<vec2<f32>>;         // [H, R, T] df
@group(0) @binding(2) var<storage, read> v: array<vec2<f32>>;         // [H, T, hd] df
@group(0) @binding(3) var<storage, read_write> ctx: array<vec2<f32>>; // [R, H·hd] df

override DF_FMA: bool = true;
override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let H = params.H;
  let T = params.T;
  let hd = params.hd;
  let d = H * hd;
  let R = params.R;
  let idx = gid.x + gid.y * nwg.x * WG; // [r, h, e] = ctx's row-major index
  if (idx >= R * d) { return; }
  let e = idx % hd;
  let h = (idx / hd) % H;
  let r = idx / d;
  let i = params.q0 + r;
  let row = (h * R + r) * T;
  var acc = vec2<f32>(0.0, 0.0);
  for (var j = 0u; j <= i; j++) { acc = df_add(acc, df_mul(p[row + j], v[(h * T + j) * hd + e])); }
  ctx[idx] = acc;
}
