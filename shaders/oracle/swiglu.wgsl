// Oracle SwiGLU product in double-float, elementwise: y = silu(gate) · up, silu(g) = g · sigmoid(g) (HF LlamaMLP,
// hidden_act 'silu'), as the CPU fp64 oracle (src/kernels/cpu/swiglu.ts: g / (1 + e^-g)). Computed as g / (1 + e^-g)
// for g >= 0 and g · e^g / (1 + e^g) for g < 0 (the same value; e^x is only ever taken of x <= 0, where df_exp
// never overflows: oracle/df_math.wgsl). The constant 1 comes in the uniform. gate, up, y: [n] df.

struct Params { n: u32, _pad0: u32, one: vec2<f32> }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> gate: array<vec2<f32>>;    // [n] df
@group(0) @binding(2) var<storage, read> up: array<vec2<f32>>;      // [n] df
@group(0) @binding(3) var<storage, read_write> y: array<vec2<f32>>; // [n] df

override DF_FMA: bool = true;
override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.n) { return; }
  let g = gate[i];
  var s: vec2<f32>;
  if (g.x >= 0.0) {
    s = df_div(g, df_add(params.one, df_exp(df_neg(g))));
  } else {
    let e = df_exp(g);
    s = df_div(df_mul(g, e), df_add(params.one, e));
  }
  y[i] = df_mul(s, up[i]);
}
