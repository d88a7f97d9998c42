// Split heads + partial rotary (GPT-NeoX, rotate-half convention).
// qkv: [T, H, 3, hd] (HF's fused QKV row per token, laid out per head), cos/sin: [T, r/2] tables
// (computed on the CPU in f64 from inv_freq[i] = base^(-2i/r), rounded to f32), outputs q, k, v: [H, T, hd].
// For e < r/2:  out[e] = x[e]·cos − x[e + r/2]·sin;  out[e + r/2] = x[e + r/2]·cos + x[e]·sin.
// Dims e >= r pass through; v is copied unrotated.

struct Params { T: u32, H: u32, hd: u32, r: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;      // [T, H, 3, hd]
@group(0) @binding(2) var<storage, read> cos_t: array<f32>;    // [T, r/2]
@group(0) @binding(3) var<storage, read> sin_t: array<f32>;    // [T, r/2]
@group(0) @binding(4) var<storage, read_write> q: array<f32>;  // [H, T, hd]
@group(0) @binding(5) var<storage, read_write> k: array<f32>;  // [H, T, hd]
@group(0) @binding(6) var<storage, read_write> v: array<f32>;  // [H, T, hd]

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
  q[i] = st(rotate(base, t, e));
  k[i] = st(rotate(base + hd, t, e));
  v[i] = st(qkv[base + 2u * hd + e]);
}
