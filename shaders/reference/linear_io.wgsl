// The reference linear kernels' parameters and bindings, the same for all three (reference/linear.wgsl,
// linear_blocked.wgsl, linear_rows.wgsl; src/kernels/linear.ts includes this before each).
// x: [M, K], W: [N, K], b: [N] (ignored when has_bias = 0), y: [M, N].

struct Params { M: u32, N: u32, K: u32, has_bias: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;       // [M, K]
@group(0) @binding(2) var<storage, read> w: array<u32>;       // f32 bits or packed f16 (load_w), [N, K]
@group(0) @binding(3) var<storage, read> b: array<f32>;       // [N]
@group(0) @binding(4) var<storage, read_write> y: array<f32>; // [M, N]
