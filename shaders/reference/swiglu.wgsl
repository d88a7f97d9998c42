// The SwiGLU product of the Llama MLP, elementwise: y = silu(gate) · up (HF LlamaMLP: act_fn(gate_proj(x)) *
// up_proj(x); the activation's output is stored before the product, as in HF). gate, up, y: [n].

struct Params { n: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> gate: array<f32>;    // [n]
@group(0) @binding(2) var<storage, read> up: array<f32>;      // [n]
@group(0) @binding(3) var<storage, read_write> y: array<f32>; // [n]

override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.n) { return; }
  y[i] = st(st(silu(gate[i])) * up[i]);
}
