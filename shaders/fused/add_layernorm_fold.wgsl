// Residual add + LayerNorm (sequential residual) with attention.dense's split-K reduction folded in: each
// element of attn_output is first formed exactly as attention.dense's own reduction would
// (common/gemm_reduce.wgsl with fused/linear_bias.wgsl): the partials [S', rows, d] added from 0 in split
// order through acc(), + bias, one st() — and written (the attn_out tap); then fused/add_layernorm.wgsl's
// work on it: r = st(attn + a), y = LN(r; w, bias). Same operations in the same order, so the same bits as the
// unfolded pair; src/engine/plan-fold.ts decides where it runs.
// a: [rows, d], dense_b: [d], dense_part: [S', rows, d], w, bias: [d], attn, r, y: [rows, d]. One workgroup per
// row; the row is cached in workgroup memory (d <= ROW_MAX).

struct Params { rows: u32, d: u32, eps: f32, dense_K: u32, dense_k_chunk: u32, dense_has_bias: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;           // [rows, d] residual stream
@group(0) @binding(2) var<storage, read> dense_b: array<f32>;     // [d] attention.dense bias (or a dummy)
@group(0) @binding(3) var<storage, read> dense_part: array<f32>;  // [S', rows, d] attention.dense's partials
@group(0) @binding(4) var<storage, read> w: array<f32>;           // [d]
@group(0) @binding(5) var<storage, read> bias: array<f32>;        // [d]
@group(0) @binding(6) var<storage, read_write> attn: array<f32>;  // [rows, d] attn_output
@group(0) @binding(7) var<storage, read_write> r: array<f32>;     // [rows, d]
@group(0) @binding(8) var<storage, read_write> y: array<f32>;     // [rows, d]

override WG: u32 = 256;
override ROW_MAX: u32 = 1024;

var<workgroup> row: array<f32, ROW_MAX>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let rr = wid.x;
  let lid = lid3.x;
  if (rr >= params.rows) { return; } // uniform per workgroup
  let base = rr * params.d;
  let S = (params.dense_K + params.dense_k_chunk - 1u) / params.dense_k_chunk;
  // Four adjacent columns per thread and step (four loads in flight); each element's sum in split order.
  for (var c0 = lid * 4u; c0 < params.d; c0 += WG * 4u) {
    var sum = vec4f(0.0);
    for (var s = 0u; s < S; s++) {
      let o = (s * params.rows + rr) * params.d + c0;
      for (var j = 0u; j < 4u; j++) {
        if (c0 + j < params.d) { sum[j] = acc(sum[j] + dense_part[o + j]); }
      }
    }
    for (var j = 0u; j < 4u; j++) {
      let c = c0 + j;
      if (c < params.d) {
        var s_sum = sum[j];
        if (params.dense_has_bias != 0u) {
          s_sum += dense_b[c];
        }
        let at = st(s_sum);
        attn[base + c] = at;
        let v = st(at + a[base + c]);
        row[c] = v;
        r[base + c] = v;
      }
    }
  }
  workgroupBarrier();
  let stats = row_stats(lid, params.d, params.eps);
  for (var c = lid; c < params.d; c += WG) {
    y[base + c] = st((row[c] - stats.x) * stats.y * w[c] + bias[c]);
  }
}
