// Oracle RMSNorm in double-float (HF LlamaRMSNorm; Qwen3's per-head q/k norm with rows = T · heads, d = head_dim),
// as the CPU fp64 oracle computes it (src/kernels/cpu/rmsnorm.ts): ms = Σx² / d; inv = 1 / sqrt(ms + eps);
// y = (x · inv) · weight. HF's cast order (fp32 normalisation, cast back, then the weight) is the identity in fp64
// and so here. x, y: [rows, d] df; weight: [d] f32. eps and the constant 1 come as df values in the uniform (a
// literal operand of a df sum can be reassociated by a shader compiler and lose its low part).
// One workgroup per row; the sum is a df tree reduction in workgroup memory.

struct Params { rows: u32, d: u32, _pad0: u32, _pad1: u32, eps: vec2<f32>, one: vec2<f32> }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec2<f32>>;       // [rows, d] df
@group(0) @binding(2) var<storage, read> weight: array<f32>;        // [d]
@group(0) @binding(3) var<storage, read_write> y: array<vec2<f32>>; // [rows, d] df

override DF_FMA: bool = true;
override WG: u32 = 64; // a power of two

var<workgroup> red: array<vec2<f32>, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= params.rows) { return; } // uniform per workgroup
  let lid = lid3.x;
  let d = params.d;
  let base = row * d;
  var q = vec2<f32>(0.0, 0.0);
  for (var c = lid; c < d; c += WG) {
    let v = x[base + c];
    q = df_add(q, df_mul(v, v));
  }
  red[lid] = q;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { red[lid] = df_add(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  let ms = df_div(red[0], df_from(f32(d))); // d exact for d < 2^24
  let inv = df_div(params.one, df_sqrt(df_add(ms, params.eps)));
  for (var c = lid; c < d; c += WG) {
    y[base + c] = df_mul_f(df_mul(x[base + c], inv), weight[c]);
  }
}
