// The f32 nearest a double-float value: its hi part (a normalised pair has |lo| <= ulp(hi) / 2, so hi is the
// value rounded to f32 but for exact ties). The local noise floor runs the reference layer on the oracle's
// input rounded to f32 this way, without the oracle leaving the GPU.
override WG: u32 = 256u;

struct Params {
  n: u32,
};

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec2<f32>>; // [n] double-float
@group(0) @binding(2) var<storage, read_write> y: array<f32>; // [n]

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * WG;
  if (i >= params.n) {
    return;
  }
  y[i] = x[i].x;
}
