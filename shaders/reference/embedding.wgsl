// Embedding gather: out[t, c] = table[ids[t], c].
// The table may be split into row chunks (a large vocabulary exceeds one storage binding): this dispatch holds
// rows [row0, row0 + rows) and writes only the tokens whose id falls there; the chunks together write every row.
// ids: [T] u32 (validated < V on the CPU), table: [rows, d] (the chunk), out: [T, d]. One thread per element.

struct Params { T: u32, d: u32, row0: u32, rows: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;      // [T]
@group(0) @binding(2) var<storage, read> table: array<u32>;    // [rows, d]: f32 bits or packed f16 (W_F16)
@group(0) @binding(3) var<storage, read_write> out: array<f32>; // [T, d]

override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.T * params.d) { return; }
  let t = i / params.d;
  let c = i % params.d;
  let id = ids[t];
  if (id < params.row0 || id >= params.row0 + params.rows) { return; }
  let j = (id - params.row0) * params.d + c;
  var v = bitcast<f32>(table[j]);
  if (W_F16) { v = unpack2x16float(table[j >> 1u])[j & 1u]; }
  out[i] = st(v);
}
