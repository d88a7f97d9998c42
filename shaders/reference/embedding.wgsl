// Embedding gather: out[t, c] = table[ids[t], c].
// ids: [T] u32 (validated < V on the CPU), table: [V, d], out: [T, d]. One thread per output element.

struct Params { T: u32, d: u32, V: u32, _pad: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;      // [T]
@group(0) @binding(2) var<storage, read> table: array<f32>;    // [V, d]
@group(0) @binding(3) var<storage, read_write> out: array<f32>; // [T, d]

override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.T * params.d) { return; }
  let t = i / params.d;
  let c = i % params.d;
  let id = min(ids[t], params.V - 1u);
  out[i] = st(table[id * params.d + c]);
}
