// Residual add + RMSNorm (fused/add_rmsnorm.wgsl) with the split-K reduction of the projection before it folded in:
// the branch b (the o or the down projection's output) is first formed exactly as that projection's own reduction
// would form it (common/gemm_reduce.wgsl with fused/linear_bias.wgsl): the partials [S, rows, d] added from 0 in split
// order through acc(), + bias, one st() — and written (the projection's tap); then add_rmsnorm.wgsl's work on it:
// r = st(a + b), y = RMSNorm(r; w, eps) (common/rms_row.wgsl). The same operations in the same order, so the same
// bits as the unfolded pair (src/kernels/fused-llama-fold.test.ts); src/engine/llama-fused.ts decides where it runs.
// a: [rows, d], b_bias: [d], b_part: [S, rows, d], w: [d], b, r, y: [rows, d]. One workgroup per row; the row is
// cached in workgroup memory (d <= ROW_MAX). Teaching faults: add_rmsnorm.wgsl's (FAULT_EPS_OUTSIDE, row_stats').

struct Params { rows: u32, d: u32, eps: f32, b_K: u32, b_k_chunk: u32, b_has_bias: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;          // [rows, d] residual stream
@group(0) @binding(2) var<storage, read> b_bias: array<f32>;     // [d] the projection's bias (or a dummy)
@group(0) @binding(3) var<storage, read> b_part: array<f32>;     // [S, rows, d] the projection's partial sums
@group(0) @binding(4) var<storage, read> w: array<f32>;          // [d]
@group(0) @binding(5) var<storage, read_write> b: array<f32>;    // [rows, d] the projection's output
@group(0) @binding(6) var<storage, read_write> r: array<f32>;    // [rows, d]
@group(0) @binding(7) var<storage, read_write> y: array<f32>;    // [rows, d]

override WG: u32 = 256;
override ROW_MAX: u32 = 1024;
override FAULT_EPS_OUTSIDE: bool = false; // read by common/rms_row.wgsl

var<workgroup> row: array<f32, ROW_MAX>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let rr = wid.x + wid.y * nwg.x;
  let lid = lid3.x;
  if (rr >= params.rows) { return; } // uniform per workgroup
  let base = rr * params.d;
  let S = (params.b_K + params.b_k_chunk - 1u) / params.b_k_chunk;
  for (var c = lid; c < params.d; c += WG) {
    var sum = 0.0;
    for (var s = 0u; s < S; s++) {
      sum = acc(sum + b_part[(s * params.rows + rr) * params.d + c]);
    }
    if (params.b_has_bias != 0u) {
      sum += b_bias[c];
    }
    let branch = st(sum);
    b[base + c] = branch;
    let v = st(a[base + c] + branch);
    r[base + c] = v;
    row[c] = v;
  }
  workgroupBarrier();
  rms_norm_row(lid, base);
}
