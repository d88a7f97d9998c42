// Fused dual LayerNorm (parallel residual): both of a layer's norms from one read of the residual row.
//   y1 = LN(x; w1, b1)  (input_layernorm)      y2 = LN(x; w2, b2)  (post_attention_layernorm)
// With DUAL = false only y1 is written (a single LayerNorm reading the row once).
// x: [rows, d], w1, b1, w2, b2: [d], y1, y2: [rows, d]. One workgroup per row; the row is cached in
// workgroup memory (d <= ROW_MAX), then the two-pass mean / biased variance run on the cache.

struct Params { rows: u32, d: u32, eps: f32, _pad: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;        // [rows, d]
@group(0) @binding(2) var<storage, read> w1: array<f32>;       // [d]
@group(0) @binding(3) var<storage, read> b1: array<f32>;       // [d]
@group(0) @binding(4) var<storage, read> w2: array<f32>;       // [d] (DUAL only)
@group(0) @binding(5) var<storage, read> b2: array<f32>;       // [d] (DUAL only)
@group(0) @binding(6) var<storage, read_write> y1: array<f32>; // [rows, d]
@group(0) @binding(7) var<storage, read_write> y2: array<f32>; // [rows, d] (DUAL only)

override WG: u32 = 256;
override ROW_MAX: u32 = 1024;
override DUAL: bool = true;

var<workgroup> row: array<f32, ROW_MAX>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let r = wid.x;
  let lid = lid3.x;
  if (r >= params.rows) { return; } // uniform per workgroup
  let base = r * params.d;
  for (var c = lid; c < params.d; c += WG) { row[c] = x[base + c]; }
  workgroupBarrier();
  let stats = row_stats(lid, params.d, params.eps);
  for (var c = lid; c < params.d; c += WG) {
    let xhat = (row[c] - stats.x) * stats.y;
    y1[base + c] = st(xhat * w1[c] + b1[c]);
    if (DUAL) { y2[base + c] = st(xhat * w2[c] + b2[c]); }
  }
}
