// Greedy pick on the GPU: out[0] = the index of the largest value of x[offset .. offset + n) — the lowest index
// on ties, NaN never wins, -Inf never wins, 0 when nothing is above -Inf (every value NaN or -Inf): exactly
// argmax() of src/engine/engine.ts, which decoding uses on the CPU.
// x: [..] f32 (a logits row at `offset`), out: [1] u32. One workgroup of WG threads (a power of two): thread t
// scans t, t + WG, … keeping its first largest, then a tree reduction keeps the larger value and, on equal
// values, the lower index.
// Values are compared as integer keys of their f32 bits (order-preserving; -0 folded into +0, NaN and -Inf below
// every candidate), so the result does not depend on how an adapter's float compares treat NaN or subnormals.

struct Params { offset: u32, n: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;         // [offset + n]
@group(0) @binding(2) var<storage, read_write> out: array<u32>; // [1]

override WG: u32 = 256;

const NONE: u32 = 0xffffffffu;  // no candidate yet
const KEY_NEG_INF: u32 = 0x007fffffu; // key of -Inf; a candidate's key must be larger

var<workgroup> keys: array<u32, WG>;
var<workgroup> idxs: array<u32, WG>;

/** Order-preserving key of an f32: a larger value has a larger key; -0 and +0 share one; NaN gets 0. */
fn key_of(v: f32) -> u32 {
  var b = bitcast<u32>(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) { return 0u; } // NaN
  if (b == 0x80000000u) { b = 0u; } // -0 == +0
  if ((b & 0x80000000u) != 0u) { return ~b; } // negative: a larger magnitude is a smaller key
  return b | 0x80000000u;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u) {
  let lid = lid3.x;
  var bk = KEY_NEG_INF;
  var bi = NONE;
  for (var j = lid; j < params.n; j += WG) {
    let k = key_of(x[params.offset + j]);
    if (k > bk) {
      bk = k;
      bi = j;
    }
  }
  keys[lid] = bk;
  idxs[lid] = bi;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) {
      let k = keys[lid + s];
      let i = idxs[lid + s];
      if (k > keys[lid] || (k == keys[lid] && i < idxs[lid])) {
        keys[lid] = k;
        idxs[lid] = i;
      }
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    out[0] = select(idxs[0], 0u, idxs[0] == NONE);
  }
}
