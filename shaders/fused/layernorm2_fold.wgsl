// The dual LayerNorm of fused/layernorm2.wgsl with the previous layer's MLP down-projection reduction folded in
// (src/engine/plan-fold.ts): row r of the residual stream x is first formed here exactly as the previous
// layer's split-K reduction would form it (common/gemm_reduce.wgsl with fused/linear_residual.wgsl): the
// partials [S, rows, d] added from 0 in split order through acc(), then + b, + attn_output (RESIDUALS = 2,
// parallel residual) and + r1, one st(); and written (the previous layer's 'out' tap). With FOLD_ATTN
// attn_output itself is formed first from attention.dense's partials as dense's own reduction would (split
// order, acc(), + bias, one st()) and written (the previous layer's attn_out tap); without it, it is read from
// `attn`. Then layernorm2's work on the row. Same operations in the same order, so the same bits as the
// unfolded ops.
// part holds both sets of partials (one binding: a kernel may have few): the MLP's [S, rows, d] from float
// mlp_off, attention.dense's [S', rows, d] from dense_off. b, dense_b: [d], r1, attn, x: [rows, d],
// w1, b1, w2, b2: [d], y1, y2: [rows, d]. One workgroup per row; the row is cached in workgroup memory
// (d <= ROW_MAX).

struct Params {
  rows: u32, d: u32, eps: f32, K: u32, k_chunk: u32, has_bias: u32,
  dense_K: u32, dense_k_chunk: u32, dense_has_bias: u32, mlp_off: u32, dense_off: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;          // the partials of both GEMMs (above)
@group(0) @binding(2) var<storage, read> b: array<f32>;             // [d] dense_4h_to_h bias
@group(0) @binding(3) var<storage, read> r1: array<f32>;            // [rows, d] the previous layer's input (or attn + x)
@group(0) @binding(4) var<storage, read> dense_b: array<f32>;       // [d] attention.dense bias (FOLD_ATTN)
@group(0) @binding(5) var<storage, read_write> attn: array<f32>;    // [rows, d] attn_output (RESIDUALS = 2)
@group(0) @binding(6) var<storage, read_write> x: array<f32>;       // [rows, d] the residual stream formed here
@group(0) @binding(7) var<storage, read> w1: array<f32>;            // [d]
@group(0) @binding(8) var<storage, read> b1: array<f32>;            // [d]
@group(0) @binding(9) var<storage, read> w2: array<f32>;            // [d] (DUAL only)
@group(0) @binding(10) var<storage, read> b2: array<f32>;           // [d] (DUAL only)
@group(0) @binding(11) var<storage, read_write> y1: array<f32>;     // [rows, d]
@group(0) @binding(12) var<storage, read_write> y2: array<f32>;     // [rows, d] (DUAL only)

override WG: u32 = 256;
override ROW_MAX: u32 = 1024;
override DUAL: bool = true;
override RESIDUALS: u32 = 2u;
override FOLD_ATTN: bool = true;

var<workgroup> row: array<f32, ROW_MAX>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let r = wid.x;
  let lid = lid3.x;
  if (r >= params.rows) { return; } // uniform per workgroup
  let base = r * params.d;
  let S = (params.K + params.k_chunk - 1u) / params.k_chunk;
  let S2 = select(0u, (params.dense_K + params.dense_k_chunk - 1u) / params.dense_k_chunk, FOLD_ATTN);
  // Four adjacent columns per thread and step, both GEMMs' partials in one loop, so a thread has up to eight
  // loads in flight; each element's sums still run in split order.
  for (var c0 = lid * 4u; c0 < params.d; c0 += WG * 4u) {
    var v = vec4f(0.0);
    var a = vec4f(0.0);
    for (var s = 0u; s < max(S, S2); s++) {
      let o = (s * params.rows + r) * params.d + c0;
      for (var j = 0u; j < 4u; j++) {
        if (c0 + j < params.d) {
          if (s < S) { v[j] = acc(v[j] + part[params.mlp_off + o + j]); }
          if (s < S2) { a[j] = acc(a[j] + part[params.dense_off + o + j]); }
        }
      }
    }
    for (var j = 0u; j < 4u; j++) {
      let c = c0 + j;
      if (c < params.d) {
        var out = v[j];
        if (params.has_bias != 0u) {
          out += b[c];
        }
        if (RESIDUALS >= 2u) {
          var r2: f32;
          if (FOLD_ATTN) {
            var at = a[j];
            if (params.dense_has_bias != 0u) {
              at += dense_b[c];
            }
            r2 = st(at);
            attn[base + c] = r2;
          } else {
            r2 = attn[base + c];
          }
          out += r2;
        }
        out += r1[base + c];
        let xv = st(out);
        x[base + c] = xv;
        row[c] = xv;
      }
    }
  }
  workgroupBarrier();
  let stats = row_stats(lid, params.d, params.eps);
  for (var c = lid; c < params.d; c += WG) {
    let xhat = (row[c] - stats.x) * stats.y;
    y1[base + c] = st(xhat * w1[c] + b1[c]);
    if (DUAL) { y2[base + c] = st(xhat * w2[c] + b2[c]); }
  }
}
