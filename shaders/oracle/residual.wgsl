// Oracle residual adds in double-float, in HF's operand order: out = (a + b) + c when has_c (parallel
// residual: a = mlp, b = attn, c = x), else out = a + b. a, b, c, out: [n] df.

struct Params { n: u32, has_c: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<vec2<f32>>;         // [n] df
@group(0) @binding(2) var<storage, read> b: array<vec2<f32>>;         // [n] df
@group(0) @binding(3) var<storage, read> c: array<vec2<f32>>;         // [n] df (a dummy when has_c = 0)
@group(0) @binding(4) var<storage, read_write> out: array<vec2<f32>>; // [n] df

override DF_FMA: bool = true;
override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.n) { return; }
  var r = df_add(a[i], b[i]);
  if (params.has_c != 0u) { r = df_add(r, c[i]); }
  out[i] = r;
}
