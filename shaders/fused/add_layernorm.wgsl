// Fused residual add + LayerNorm (sequential residual): r = b + a (HF: attn_output + hidden_states), then
// y = LN(r; w, bias); writes both the new residual r and the normalized y in one pass over the row.
// a, b: [rows, d], w, bias: [d], r, y: [rows, d]. One workgroup per row; the row is cached in workgroup
// memory (d <= ROW_MAX).

struct Params { rows: u32, d: u32, eps: f32, _pad: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;        // [rows, d] residual stream
@group(0) @binding(2) var<storage, read> b: array<f32>;        // [rows, d] branch output
@group(0) @binding(3) var<storage, read> w: array<f32>;        // [d]
@group(0) @binding(4) var<storage, read> bias: array<f32>;     // [d]
@group(0) @binding(5) var<storage, read_write> r: array<f32>;  // [rows, d]
@group(0) @binding(6) var<storage, read_write> y: array<f32>;  // [rows, d]

override WG: u32 = 256;
override ROW_MAX: u32 = 1024;

var<workgroup> row: array<f32, ROW_MAX>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let rr = wid.x;
  let lid = lid3.x;
  if (rr >= params.rows) { return; } // uniform per workgroup
  let base = rr * params.d;
  for (var c = lid; c < params.d; c += WG) {
    let v = st(b[base + c] + a[base + c]);
    row[c] = v;
    r[base + c] = v;
  }
  workgroupBarrier();
  let stats = row_stats(lid, params.d, params.eps);
  for (var c = lid; c < params.d; c += WG) {
    y[base + c] = st((row[c] - stats.x) * stats.y * w[c] + bias[c]);
  }
}
