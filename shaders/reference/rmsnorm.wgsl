// RMSNorm over the last dim (HF LlamaRMSNorm): y = (x / sqrt(mean(x²) + eps)) · weight.
// x: [rows, d], weight: [d], y: [rows, d]. One workgroup per row. In HF's order: the mean of squares in f32 of the
// input, x · rsqrt(· + eps) in f32, cast back to the storage type (st), then times the weight and stored (st).
// With rows = T · heads and d = head_dim it is Qwen3's per-head q/k norm.

struct Params { rows: u32, d: u32, eps: f32, _pad: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;       // [rows, d]
@group(0) @binding(2) var<storage, read> weight: array<f32>;  // [d]
@group(0) @binding(3) var<storage, read_write> y: array<f32>; // [rows, d]

override WG: u32 = 128;
var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x;
  let lid = lid3.x;
  if (row >= params.rows) { return; } // uniform per workgroup
  let base = row * params.d;
  var q = 0.0;
  for (var c = lid; c < params.d; c += WG) {
    let v = x[base + c];
    q += v * v;
  }
  partial[lid] = q;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { partial[lid] = partial[lid] + partial[lid + s]; }
    workgroupBarrier();
  }
  let inv = 1.0 / sqrt(partial[0] / f32(params.d) + params.eps);
  for (var c = lid; c < params.d; c += WG) {
    y[base + c] = st(st(x[base + c] * inv) * weight[c]);
  }
}
