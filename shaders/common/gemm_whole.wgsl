// The unsplit fused GEMM (see common/gemm_core.wgsl): the core hands its sums straight to the epilogue.
const GEMM_SPLIT: bool = false;

fn gemm_store_partial(s: u32, m: u32, n: u32, v: vec4f) {}
