// Pass 1's 13 operand slots (src/compare/gpu-metrics-slots.ts): the operand buffers of one dispatch, each read as
// u32 words (f32 bits, or double-float pairs). Bindings 0–2 are compare_tiles.wgsl's tiles, edges and records.

@group(0) @binding(3) var<storage, read> o0: array<u32>;
@group(0) @binding(4) var<storage, read> o1: array<u32>;
@group(0) @binding(5) var<storage, read> o2: array<u32>;
@group(0) @binding(6) var<storage, read> o3: array<u32>;
@group(0) @binding(7) var<storage, read> o4: array<u32>;
@group(0) @binding(8) var<storage, read> o5: array<u32>;
@group(0) @binding(9) var<storage, read> o6: array<u32>;
@group(0) @binding(10) var<storage, read> o7: array<u32>;
@group(0) @binding(11) var<storage, read> o8: array<u32>;
@group(0) @binding(12) var<storage, read> o9: array<u32>;
@group(0) @binding(13) var<storage, read> o10: array<u32>;
@group(0) @binding(14) var<storage, read> o11: array<u32>;
@group(0) @binding(15) var<storage, read> o12: array<u32>;

/** Word i of operand slot s (s is the same across a workgroup: one branch, taken alike by every thread). */
fn opnd(s: u32, i: u32) -> u32 {
  switch s {
    case 0u: { return o0[i]; }
    case 1u: { return o1[i]; }
    case 2u: { return o2[i]; }
    case 3u: { return o3[i]; }
    case 4u: { return o4[i]; }
    case 5u: { return o5[i]; }
    case 6u: { return o6[i]; }
    case 7u: { return o7[i]; }
    case 8u: { return o8[i]; }
    case 9u: { return o9[i]; }
    case 10u: { return o10[i]; }
    case 11u: { return o11[i]; }
    default: { return o12[i]; }
  }
}
