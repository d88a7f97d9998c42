// Oracle attention scores in double-float, every family's: grouped-query heads (HF repeat_kv: query head h reads
// KV head h / group; GPT-NeoX: group 1) and an optional sliding window, for the query rows i = q0 + r (r < R) of T
// keys (q0 = 0, R = T: every row; a decode's or a run check's rows q0..T−1 otherwise). s[h, r, j] =
// (q[h, i] · k[h / group, j]) · scale for the keys row i sees, first(i) <= j <= i with first(i) = max(0, i − window
// + 1) under a window (window = 0: none, first = 0), and 0 for the others (the softmax reads only the keys a row
// sees; the tap shows them as 0). q: [H, T, hd] df; k: [KV, T, hd] df; s: [H, R, T] df; scale = 1 / sqrt(hd) as a
// df value in the uniform (the CPU oracle's fp64 value). One thread per score; the dot product is a df sum of exact
// products in the CPU oracle's order (src/kernels/cpu/attention.ts), the same for a row whatever q0 and R.
// q_off, k_off: where q and k start in their buffers, in elements (GPT-NeoX's q, k, v packed in one buffer).

struct Params {
  H: u32, T: u32, hd: u32, group: u32, window: u32, q_off: u32, k_off: u32, q0: u32,
  scale: vec2<f32>, R: u32, _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<vec2<f32>>;       // [H, T, hd] df
@group(0) @binding(2) var<storage, read> k: array<vec2<f32>>;       // [KV, T, hd] df
@group(0) @binding(3) var<storage, read_write> s: array<vec2<f32>>; // [H, R, T] df

override DF_FMA: bool = true;
override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let T = params.T;
  let hd = params.hd;
  let R = params.R;
  let idx = gid.x + gid.y * nwg.x * WG; // [h, r, j]
  if (idx >= params.H * R * T) { return; }
  let j = idx % T;
  let i = params.q0 + (idx / T) % R;
  let h = idx / (R * T);
  var first = 0u;
  if (params.window > 0u && i + 1u > params.window) { first = i + 1u - params.window; }
  if (j > i || j < first) {
    s[idx] = vec2<f32>(0.0, 0.0);
    return;
  }
  let qo = params.q_off + (h * T + i) * hd;
  let ko = params.k_off + ((h / params.group) * T + j) * hd;
  var acc = vec2<f32>(0.0, 0.0);
  for (var e = 0u; e < hd; e++) { acc = df_add(acc, df_mul(q[qo + e], k[ko + e])); }
  s[idx] = df_mul(acc, params.scale);
}
