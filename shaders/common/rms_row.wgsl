// The RMSNorm step of the fused add + RMSNorm kernels (fused/add_rmsnorm.wgsl, fused/add_rmsnorm_fold.wgsl), after
// row_stats.wgsl: y = row / sqrt(mean(row²) + eps) · w over the row cached in the including kernel's workgroup array
// `row`, written to its `y` [rows, d] from `base`; `w` [d], `params` (d, eps) and the override FAULT_EPS_OUTSIDE are
// the including kernel's too. The teaching fault FAULT_EPS_OUTSIDE takes eps outside the root,
// row / (sqrt(mean(row²)) + eps) — about eps/rms relative on every element, large where a row's rms is small.

fn rms_norm_row(lid: u32, base: u32) {
  let ms = wg_sum(slice_sum(lid, params.d, 0.0, true), lid) / f32(params.d);
  let eps = params.eps * FAULT_EPS_SCALE;
  let inv = select(1.0 / sqrt(ms + eps), 1.0 / (sqrt(ms) + eps), FAULT_EPS_OUTSIDE);
  for (var c = lid; c < params.d; c += WG) {
    y[base + c] = st(st(row[c] * inv) * w[c]);
  }
}
