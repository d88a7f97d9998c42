// Oracle split of the fused QKV into heads + rotary (rotate-half, HF GPT-NeoX) in double-float.
// qkv: [T, H, 3, hd] df (per head q = [0, hd), k = [hd, 2hd), v = [2hd, 3hd)); q, k, v: [H, T, hd] df.
// The first r = rotary_ndims dims of q and k are rotated at position t (half = r / 2, i < half):
//   out[i] = x[i] cos − x[i + half] sin,   out[i + half] = x[i + half] cos + x[i] sin.
// cos, sin: [T, half] df, computed on the CPU in fp64 (angle = t · inv_freq[i]) and split into df pairs.
// One thread per (h, t, e); each writes q, k and v at that index.

struct Params { T: u32, H: u32, hd: u32, r: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> qkv: array<vec2<f32>>;     // [T, H, 3, hd] df
@group(0) @binding(2) var<storage, read> cosv: array<vec2<f32>>;    // [T, r/2] df
@group(0) @binding(3) var<storage, read> sinv: array<vec2<f32>>;    // [T, r/2] df
@group(0) @binding(4) var<storage, read_write> q: array<vec2<f32>>; // [H, T, hd] df
@group(0) @binding(5) var<storage, read_write> k: array<vec2<f32>>; // [H, T, hd] df
@group(0) @binding(6) var<storage, read_write> v: array<vec2<f32>>; // [H, T, hd] df

override DF_FMA: bool = true;
override WG: u32 = 256;

// x[e] rotated at position t, from the head's slice starting at src.
fn rotate(src: u32, e: u32, t: u32) -> vec2<f32> {
  let half = params.r / 2u;
  if (e >= params.r) { return qkv[src + e]; }
  if (e < half) {
    let c = cosv[t * half + e];
    let s = sinv[t * half + e];
    return df_sub(df_mul(qkv[src + e], c), df_mul(qkv[src + e + half], s));
  }
  let i = e - half;
  let c = cosv[t * half + i];
  let s = sinv[t * half + i];
  return df_add(df_mul(qkv[src + e], c), df_mul(qkv[src + i], s));
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let T = params.T;
  let H = params.H;
  let hd = params.hd;
  let idx = gid.x + gid.y * nwg.x * WG; // [h, t, e]
  if (idx >= H * T * hd) { return; }
  let e = idx % hd;
  let t = (idx / hd) % T;
  let h = idx / (T * hd);
  let src = (t * H + h) * 3u * hd; // qkv[t, h, 0, 0]
  q[idx] = rotate(src, e, t);
  k[idx] = rotate(src + hd, e, t);
  v[idx] = qkv[src + 2u * hd + e];
}
