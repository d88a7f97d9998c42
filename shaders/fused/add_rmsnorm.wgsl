// Fused residual add + RMSNorm (the Llama family's decoder layer: `hidden_states = residual + hidden_states`, then
// the next RMSNorm): r = a + b, y = r / sqrt(mean(r²) + eps) · w; writes both the new residual r and the
// normalized y in one pass over the row. With `ADD` off it is RMSNorm alone on a (b unread): the first layer's
// input_layernorm. a, b: [rows, d], w: [d], r, y: [rows, d]. One workgroup per row; the row is cached in
// workgroup memory (d <= ROW_MAX). The mean of squares uses row_stats.wgsl's sums (FAULT_REORDER applies), the
// norm itself is common/rms_row.wgsl's (teaching fault FAULT_EPS_OUTSIDE: eps outside the root).

struct Params { rows: u32, d: u32, eps: f32, _pad: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;        // [rows, d] residual stream
@group(0) @binding(2) var<storage, read> b: array<f32>;        // [rows, d] branch output (unread without ADD)
@group(0) @binding(3) var<storage, read> w: array<f32>;        // [d]
@group(0) @binding(4) var<storage, read_write> r: array<f32>;  // [rows, d] (unwritten without ADD)
@group(0) @binding(5) var<storage, read_write> y: array<f32>;  // [rows, d]

override WG: u32 = 256;
override ROW_MAX: u32 = 1024;
override ADD: bool = true;
override FAULT_EPS_OUTSIDE: bool = false; // read by common/rms_row.wgsl

var<workgroup> row: array<f32, ROW_MAX>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let rr = wid.x + wid.y * nwg.x;
  let lid = lid3.x;
  if (rr >= params.rows) { return; } // uniform per workgroup
  let base = rr * params.d;
  for (var c = lid; c < params.d; c += WG) {
    var v = a[base + c];
    if (ADD) {
      v = st(v + b[base + c]);
      r[base + c] = v;
    }
    row[c] = v;
  }
  workgroupBarrier();
  rms_norm_row(lid, base);
}
