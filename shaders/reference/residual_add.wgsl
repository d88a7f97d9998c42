// Residual add, in Hugging Face's order. Two inputs: out = b + a. Three inputs (THREE = true, the parallel
// residual): out = (c + b) + a, i.e. HF's `mlp_output + attn_output + hidden_states` with a = hidden,
// b = attn, c = mlp. All [n]; out never aliases an input (the residual stream ping-pongs).

struct Params { n: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;         // [n]
@group(0) @binding(2) var<storage, read> b: array<f32>;         // [n]
@group(0) @binding(3) var<storage, read> c: array<f32>;         // [n] (read only when THREE)
@group(0) @binding(4) var<storage, read_write> out: array<f32>; // [n]

override WG: u32 = 256;
override THREE: bool = false;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.n) { return; }
  if (THREE) {
    out[i] = st((c[i] + b[i]) + a[i]);
  } else {
    out[i] = st(b[i] + a[i]);
  }
}
