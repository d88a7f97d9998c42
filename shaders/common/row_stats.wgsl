// Row statistics for the fused LayerNorms: mean and 1/sqrt(biased variance + eps) of the row cached in the
// including kernel's workgroup array `row` (length >= d), reduced across a workgroup of WG threads.
// Fault switches (off by default; the teaching faults of src/run/faults.ts):
//   FAULT_EPS_SCALE  eps is multiplied by this (1 = correct; the "wrong LayerNorm epsilon" fault);
//   FAULT_REORDER    each thread sums its strided slice backwards and the tree reduces in the opposite
//                    pairing — a changed summation order, numerically benign.

override FAULT_EPS_SCALE: f32 = 1.0;
override FAULT_REORDER: bool = false;

var<workgroup> red: array<f32, WG>;

fn wg_sum(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  if (FAULT_REORDER) {
    // Adjacent pairs first: (0,1), (2,3), … then (0,2), … — another association of the same sum.
    for (var s = 1u; s < WG; s = s * 2u) {
      if (lid % (2u * s) == 0u) { red[lid] = red[lid] + red[lid + s]; }
      workgroupBarrier();
    }
  } else {
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
      if (lid < s) { red[lid] = red[lid] + red[lid + s]; }
      workgroupBarrier();
    }
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

fn slice_sum(lid: u32, d: u32, center: f32, squares: bool) -> f32 {
  var s = 0.0;
  let n = select(0u, (d - lid + WG - 1u) / WG, lid < d); // elements lid, lid+WG, ...
  for (var j = 0u; j < n; j++) {
    let idx = select(j, n - 1u - j, FAULT_REORDER);
    let v = row[lid + idx * WG] - center;
    s += select(v, v * v, squares);
  }
  return s;
}

/** (mean, inv_std) of row[0..d). */
fn row_stats(lid: u32, d: u32, eps: f32) -> vec2f {
  let mean = wg_sum(slice_sum(lid, d, 0.0, false), lid) / f32(d);
  let variance = wg_sum(slice_sum(lid, d, mean, true), lid) / f32(d);
  return vec2f(mean, 1.0 / sqrt(variance + eps * FAULT_EPS_SCALE));
}
