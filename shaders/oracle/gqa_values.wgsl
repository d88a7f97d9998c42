// Oracle attention-weighted values in double-float, every family's: ctx[r, h·hd + e] = Σ_j p[h, r, j] ·
// v[h / group, j, e] over the keys row i = q0 + r sees (first(i) <= j <= i, first(i) = max(0, i − window + 1) under a
// window, else 0), HF's transpose + reshape to [R, H·hd], for the query rows q0..q0+R−1 of T (q0 = 0, R = T: every
// row). p: [H, R, T] df; v: [KV, T, hd] df (the heads split of the v projection); ctx: [R, H·hd] df. One thread per
// output; the sum is a df sum of df products in the CPU oracle's order, the same for a row whatever q0 and R.
// v_off: where v starts in its buffer, in elements (GPT-NeoX's q, k, v packed in one buffer).

struct Params { H: u32, T: u32, hd: u32, group: u32, window: u32, v_off: u32, q0: u32, R: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> p: array<vec2<f32>>;         // [H, R, T] df
@group(0) @binding(2) var<storage, read> v: array<vec2<f32>>;         // [KV, T, hd] df
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
  var first = 0u;
  if (params.window > 0u && i + 1u > params.window) { first = i + 1u - params.window; }
  let row = (h * R + r) * T;
  let vo = params.v_off + (h / params.group) * T * hd + e;
  var acc = vec2<f32>(0.0, 0.0);
  for (var j = first; j <= i; j++) { acc = df_add(acc, df_mul(p[row + j], v[vo + j * hd])); }
  ctx[idx] = acc;
}
