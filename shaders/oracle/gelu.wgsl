// Oracle exact (erf) GELU in double-float, elementwise: y = gelu(x) = 0.5 x (1 + erf(x / √2)) (df_gelu from
// oracle/df_math.wgsl). x, y: [n] df.

struct Params { n: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec2<f32>>;       // [n] df
@group(0) @binding(2) var<storage, read_write> y: array<vec2<f32>>; // [n] df

override DF_FMA: bool = true;
override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.n) { return; }
  y[i] = df_gelu(x[i]);
}
