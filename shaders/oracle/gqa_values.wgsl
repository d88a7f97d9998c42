// Oracle attention-weighted values of the Llama family in double-float: ctx[i, h·hd + e] = Σ_j p[h, i, j] ·
// v[h / group, j, e] over the keys row i sees (first(i) <= j <= i, first(i) = max(0, i − window + 1) under a window,
// else 0), HF's transpose + reshape to [T, H·hd]. p: [H, T, T] df; v: [KV, T, hd] df (the heads split of the v
// projection); ctx: [T, H·hd] df. One thread per output; the sum is a df sum of df products in the CPU oracle's order.
// v_off: where v starts in its buffer, in elements (GPT-NeoX's q, k, v packed in one buffer).

struct Params { H: u32, T: u32, hd: u32, group: u32, window: u32, v_off: u32, _pad1: u32, _pad2: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> p: array<vec2<f32>>;         // [H, T, T] df
@group(0) @binding(2) var<storage, read> v: array<vec2<f32>>;         // [KV, T, hd] df
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
  var first = 0u;
  if (params.window > 0u && i + 1u > params.window) { first = i + 1u - params.window; }
  let row = (h * T + i) * T;
  let vo = params.v_off + (h / params.group) * T * hd + e;
  var acc = vec2<f32>(0.0, 0.0);
  for (var j = first; j <= i; j++) { acc = df_add(acc, df_mul(p[row + j], v[vo + j * hd])); }
  ctx[idx] = acc;
}
