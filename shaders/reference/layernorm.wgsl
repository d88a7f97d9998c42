// LayerNorm over the last dim, biased variance (as torch.nn.LayerNorm):
//   y = (x - mean) / sqrt(var + eps) * weight + bias
// x: [rows, d], weight/bias: [d], y: [rows, d]. One workgroup per row; two passes over the row
// (mean, then the mean of squared deviations) so the variance does not lose digits to cancellation.

struct Params { rows: u32, d: u32, eps: f32, _pad: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;       // [rows, d]
@group(0) @binding(2) var<storage, read> weight: array<f32>;  // [d]
@group(0) @binding(3) var<storage, read> bias: array<f32>;    // [d]
@group(0) @binding(4) var<storage, read_write> y: array<f32>; // [rows, d]

override WG: u32 = 128;
var<workgroup> partial: array<f32, WG>;

fn row_sum(v: f32, lid: u32) -> f32 {
  partial[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { partial[lid] = partial[lid] + partial[lid + s]; }
    workgroupBarrier();
  }
  let total = partial[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let row = wid.x;
  let lid = lid3.x;
  if (row >= params.rows) { return; } // uniform per workgroup
  let base = row * params.d;
  var s = 0.0;
  for (var c = lid; c < params.d; c += WG) { s += x[base + c]; }
  let mean = row_sum(s, lid) / f32(params.d);
  var q = 0.0;
  for (var c = lid; c < params.d; c += WG) {
    let dv = x[base + c] - mean;
    q += dv * dv;
  }
  let variance = row_sum(q, lid) / f32(params.d);
  let inv = 1.0 / sqrt(variance + params.eps);
  for (var c = lid; c < params.d; c += WG) {
    y[base + c] = st((x[base + c] - mean) * inv * weight[c] + bias[c]);
  }
}
