// Pass 1's 5 operand slots (src/compare/gpu-metrics-slots.ts): the operand buffers of one dispatch, each read as
// u32 words (f32 bits, or double-float pairs). Bindings 0–2 are compare_tiles.wgsl's tiles, edges and records.

@group(0) @binding(3) var<storage, read> o0: array<u32>;
@group(0) @binding(4) var<storage, read> o1: array<u32>;
@group(0) @binding(5) var<storage, read> o2: array<u32>;
@group(0) @binding(6) var<storage, read> o3: array<u32>;
@group(0) @binding(7) var<storage, read> o4: array<u32>;

/** Word i of operand slot s (s is the same across a workgroup: one branch, taken alike by every thread). */
fn opnd(s: u32, i: u32) -> u32 {
  switch s {
    case 0u: { return o0[i]; }
    case 1u: { return o1[i]; }
    case 2u: { return o2[i]; }
    case 3u: { return o3[i]; }
    default: { return o4[i]; }
  }
}
