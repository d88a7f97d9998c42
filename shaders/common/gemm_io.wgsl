// What the cores without the tiled core's staging share (common/gemm_plain.wgsl, gemm_gemv.wgsl,
// gemm_subgroup.wgsl): the x and W bindings after the kernel file's own, the tiled core's override constants (BK
// decides the padding; the others are accepted so that a launch's constants bind to any core), and GEMM_NONE.

@group(0) @binding(GEMM_IN) var<storage, read> x: array<f32>; // [M, K]
@group(0) @binding(GEMM_IN + 1u) var<storage, read> w: array<u32>; // f32 bits or packed f16 (load_w), rows of K

override BM: u32 = 128;
override BN: u32 = 128;
override BK: u32 = 8;
override TM: u32 = 8;
override TN: u32 = 8;
override GEMM_BUFS: u32 = 1;
override GEMM_GROUP_M: u32 = 1;
override FAULT_TILE_OFFSET: bool = false;

const GEMM_NONE: u32 = 0xffffffffu;
