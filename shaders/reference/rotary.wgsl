// Split heads + partial rotary (GPT-NeoX, rotate-half convention).
// qkv: [T, H, 3, hd] (HF's fused QKV row per token, laid out per head), cos/sin: [T, r/2] tables
// (computed on the CPU in f64 from inv_freq[i] = base^(-2i/r), rounded to f32), outputs q, k, v: [H, T, hd].
// For e < r/2:  out[e] = x[e]·cos − x[e + r/2]·sin;  out[e + r/2] = x[e + r/2]·cos + x[e]·sin.
// Dims e >= r pass through; v is copied unrotated.
// Positions (KV-cache decoding): row t of this dispatch is the token at position p0 + t (its cos/sin row); q is
// written at row t of [H, T, hd], k and v at row p0 + t of [H, KT, hd] (the cache, KT rows per head). A whole
// forward is p0 = 0, KT = T. cos/sin then hold at least p0 + T rows.

struct Params { T: u32, H: u32, hd: u32, r: u32, p0: u32, KT: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;      // [T, H, 3, hd]
@group(0) @binding(2) var<storage, read> cos_t: array<f32>;    // [>= p0 + T, r/2]
@group(0) @binding(3) var<storage, read> sin_t: array<f32>;    // [>= p0 + T, r/2]
@group(0) @binding(4) var<storage, read_write> q: array<f32>;  // [H, T, hd]
@group(0) @binding(5) var<storage, read_write> k: array<f32>;  // [H, KT, hd]
@group(0) @binding(6) var<storage, read_write> v: array<f32>;  // [H, KT, hd]

override WG: u32 = 256;

fn rotate(src: u32, t: u32, e: u32) -> f32 {
  let x = qkv[src + e];
  let half = params.r / 2u;
  if (e >= params.r) { return x; }
  if (e < half) {
    let c = cos_t[t * half + e];
    let s = sin_t[t * half + e];
    return x * c - qkv[src + e + half] * s;
  }
  let c = cos_t[t * half + e - half];
  let s = sin_t[t * half + e - half];
  return x * c + qkv[src + e - half] * s;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG; // over [H, T, hd]
  let hd = params.hd;
  if (i >= params.H * params.T * hd) { return; }
  let e = i % hd;
  let t = (i / hd) % params.T;
  let h = i / (hd * params.T);
  let base = (t * params.H + h) * 3u * hd; // qkv[t, h, 0, 0]
  let pos = params.p0 + t;
  let kv = (h * params.KT + pos) * hd + e; // k, v [h, pos, e]
  q[i] = st(rotate(base, pos, e));
  k[kv] = st(rotate(base + hd, pos, e));
  v[kv] = st(qkv[base + 2u * hd + e]);
}
