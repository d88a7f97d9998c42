// Oracle softmax of the attention in double-float, every family's, over the keys each row sees (causal, and a
// sliding window when window > 0: first(i) = max(0, i − window + 1) <= j <= i), as the CPU oracle
// (src/kernels/cpu/attention.ts softmaxCausalF64): m = max s[j]; e_j = exp(s[j] − m); p[j] = e_j · (1 / Σ e_j); 0 for
// the keys the row does not see. s, p: [H, R, T] df (rows h · R + r), the query rows i = q0 + r (r < R) of T keys
// (q0 = 0, R = T: every row); a row's values do not depend on q0 and R. The constant 1 comes as a df value in the
// uniform. One workgroup per row; max and sum are tree reductions. df_exp from oracle/df_math.wgsl.

struct Params { T: u32, rows: u32, window: u32, q0: u32, one: vec2<f32>, R: u32, _pad0: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> s: array<vec2<f32>>;       // [H, R, T] df
@group(0) @binding(2) var<storage, read_write> p: array<vec2<f32>>; // [H, R, T] df

override DF_FMA: bool = true;
override WG: u32 = 64; // a power of two

var<workgroup> red: array<vec2<f32>, WG>;

// a > b for df values (normalised pairs: compare hi, then lo).
fn df_gt(a: vec2<f32>, b: vec2<f32>) -> bool {
  return a.x > b.x || (a.x == b.x && a.y > b.y);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x; // h * R + r
  if (row >= params.rows) { return; } // uniform per workgroup
  let lid = lid3.x;
  let T = params.T;
  let i = params.q0 + row % params.R;
  let base = row * T;
  var first = 0u;
  if (params.window > 0u && i + 1u > params.window) { first = i + 1u - params.window; }
  // Row max (every lane starts from the first key, which every row sees).
  var m = s[base + first];
  for (var j = first + lid; j <= i; j += WG) {
    let v = s[base + j];
    if (df_gt(v, m)) { m = v; }
  }
  red[lid] = m;
  workgroupBarrier();
  for (var st = WG / 2u; st > 0u; st = st / 2u) {
    if (lid < st && df_gt(red[lid + st], red[lid])) { red[lid] = red[lid + st]; }
    workgroupBarrier();
  }
  let rowmax = red[0];
  workgroupBarrier();
  var sum = vec2<f32>(0.0, 0.0);
  for (var j = first + lid; j <= i; j += WG) {
    let e = df_exp(df_sub(s[base + j], rowmax));
    p[base + j] = e;
    sum = df_add(sum, e);
  }
  red[lid] = sum;
  workgroupBarrier();
  for (var st = WG / 2u; st > 0u; st = st / 2u) {
    if (lid < st) { red[lid] = df_add(red[lid], red[lid + st]); }
    workgroupBarrier();
  }
  let inv = df_div(params.one, red[0]);
  // Each lane rescales the columns it wrote itself (no barrier needed between the write and the read): the
  // columns j ≡ first + lid (mod WG) from first on; before first they are 0, and lane lid zeroes j ≡ lid there.
  for (var j = lid; j < T; j += WG) {
    if (j < first || j > i) { p[base + j] = vec2<f32>(0.0, 0.0); }
  }
  for (var j = first + lid; j <= i; j += WG) { p[base + j] = df_mul(p[base + j], inv); }
}
