// Oracle embedding gather: out[t, c] = table[ids[t], c] as a df value (hi = the stored weight, lo = 0: exact).
// The table may be split into row chunks (a large vocabulary exceeds one storage binding): this dispatch holds
// rows [row0, row0 + rows) and writes only the tokens whose id falls there; the chunks together write every row.
// ids: [T] u32 (checked < V on the CPU), table: [rows, d] (f32 bits or packed f16), out: [T, d] df.

struct Params { T: u32, d: u32, row0: u32, rows: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;             // [T]
@group(0) @binding(2) var<storage, read> w: array<u32>;               // [rows, d] (load_w)
@group(0) @binding(3) var<storage, read_write> out: array<vec2<f32>>; // [T, d] df

override DF_FMA: bool = true;
override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.T * params.d) { return; }
  let t = i / params.d;
  let c = i % params.d;
  let id = ids[t];
  if (id < params.row0 || id >= params.row0 + params.rows) { return; }
  out[i] = vec2<f32>(load_w((id - params.row0) * params.d + c), 0.0);
}
