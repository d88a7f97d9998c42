// f32 -> df, exactly: out[i] = (x[offset + i], 0). The residual stream handed to a single oracle layer by the
// engine; a run's recorded rows from a given row on (offset = that row × its width). x: [offset + n] f32,
// out: [n] df.

struct Params { n: u32, offset: u32, _pad1: u32, _pad2: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;               // [offset + n]
@group(0) @binding(2) var<storage, read_write> out: array<vec2<f32>>; // [n] df

override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.n) { return; }
  out[i] = vec2<f32>(x[params.offset + i], 0.0);
}
