// Oracle LayerNorm in double-float (torch.nn.LayerNorm: biased variance, eps inside the sqrt), as the CPU
// oracle computes it: mean = Σx / d; var = Σ(x − mean)² / d; inv = 1 / sqrt(var + eps);
// y = (x − mean) · inv · weight + bias. Two passes over the row (no cancellation in the variance).
// x, y: [rows, d] df; weight, bias: [d] f32. eps and the constant 1 come as df values in the uniform (a literal
// operand of a df sum can be reassociated by a shader compiler and lose its low part).
// One workgroup per row; the sums are df tree reductions in workgroup memory.

struct Params { rows: u32, d: u32, _pad0: u32, _pad1: u32, eps: vec2<f32>, one: vec2<f32> }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec2<f32>>;       // [rows, d] df
@group(0) @binding(2) var<storage, read> weight: array<f32>;        // [d]
@group(0) @binding(3) var<storage, read> bias: array<f32>;          // [d]
@group(0) @binding(4) var<storage, read_write> y: array<vec2<f32>>; // [rows, d] df

override DF_FMA: bool = true;
override WG: u32 = 64; // a power of two

var<workgroup> red: array<vec2<f32>, WG>;

fn row_sum(v: vec2<f32>, lid: u32) -> vec2<f32> {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { red[lid] = df_add(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= params.rows) { return; } // uniform per workgroup
  let lid = lid3.x;
  let d = params.d;
  let base = row * d;
  let dd = df_from(f32(d)); // exact for d < 2^24
  var s = vec2<f32>(0.0, 0.0);
  for (var c = lid; c < d; c += WG) { s = df_add(s, x[base + c]); }
  let mean = df_div(row_sum(s, lid), dd);
  var q = vec2<f32>(0.0, 0.0);
  for (var c = lid; c < d; c += WG) {
    let dv = df_sub(x[base + c], mean);
    q = df_add(q, df_mul(dv, dv));
  }
  let variance = df_div(row_sum(q, lid), dd);
  let inv = df_div(params.one, df_sqrt(df_add(variance, params.eps)));
  for (var c = lid; c < d; c += WG) {
    let n = df_mul(df_sub(x[base + c], mean), inv);
    y[base + c] = df_add_f(df_mul_f(n, weight[c]), bias[c]);
  }
}
