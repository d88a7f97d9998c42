// Split heads + rotary of the Llama family (HF apply_rotary_pos_emb, rotate-half over the first r dims of each
// head; r = head_dim for Llama). x: rows of a projection's output, row t at x[t · stride + off ..], holding
// [heads, hd] (a q, k or v projection alone: stride = heads · hd, off = 0; one concatenated [q; k; v] GEMM: its row
// width and the part's column). cos/sin: [>= p0 + T, r/2] tables computed on the CPU in f64 from the model's
// inv_freq table (theta and rope_scaling are only that table: src/kernels/cpu/rotary-angles.ts), rounded to f32.
// out: [heads, KT, hd], row t written at row o0 + t: a key or value of a KV cache at its position (o0 = p0), a
// query at its own row (o0 = 0, KT = T); a whole forward: p0 = o0 = 0, KT = T. Row t is rotated at position p0 + t.
// r = 0 splits alone (v).
// For e < r/2:  out[e] = x[e]·cos − x[e + r/2]·sin;  out[e + r/2] = x[e + r/2]·cos + x[e]·sin; e >= r passes.

struct Params { T: u32, heads: u32, hd: u32, r: u32, p0: u32, KT: u32, stride: u32, off: u32, o0: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;         // [T, stride], the part at [off, off + heads·hd)
@group(0) @binding(2) var<storage, read> cos_t: array<f32>;     // [>= p0 + T, r/2]
@group(0) @binding(3) var<storage, read> sin_t: array<f32>;     // [>= p0 + T, r/2]
@group(0) @binding(4) var<storage, read_write> out: array<f32>; // [heads, KT, hd]

override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG; // over [heads, T, hd]
  let hd = params.hd;
  if (i >= params.heads * params.T * hd) { return; }
  let e = i % hd;
  let t = (i / hd) % params.T;
  let h = i / (hd * params.T);
  let src = t * params.stride + params.off + h * hd; // x[t, h, 0]
  let pos = params.p0 + t;
  let half = params.r / 2u;
  var y = x[src + e];
  if (e < half) {
    y = y * cos_t[pos * half + e] - x[src + e + half] * sin_t[pos * half + e];
  } else if (e < params.r) {
    y = y * cos_t[pos * half + e - half] + x[src + e - half] * sin_t[pos * half + e - half];
  }
  out[(h * params.KT + params.o0 + t) * hd + e] = st(y);
}
