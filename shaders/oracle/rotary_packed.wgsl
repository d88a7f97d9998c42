// Oracle split of GPT-NeoX's fused QKV into heads + rotary (rotate-half) in double-float, into ONE buffer: the
// registry's `qkv_rot` slot, q, k, v each [H, T, hd] one after the other ([3, H, T, hd]), as the CPU fp64 form packs
// them (src/kernels/cpu/op-fp64.ts); the GPU oracle copies q, k, v out of it where it keeps them as taps.
// qkv [T, H, 3, hd] df, per head q = [0, hd), k = [hd, 2hd), v = [2hd, 3hd); the first r dims of q and k
// rotated at position t (half = r / 2, i < half): out[i] = x[i] cos − x[i + half] sin, out[i + half] =
// x[i + half] cos + x[i] sin. cos, sin: [T, r/2] df from the fp64 angles. One thread per (h, t, e).

struct Params { T: u32, H: u32, hd: u32, r: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> qkv: array<vec2<f32>>;       // [T, H, 3, hd] df
@group(0) @binding(2) var<storage, read> cosv: array<vec2<f32>>;      // [T, r/2] df
@group(0) @binding(3) var<storage, read> sinv: array<vec2<f32>>;      // [T, r/2] df
@group(0) @binding(4) var<storage, read_write> out: array<vec2<f32>>; // [3, H, T, hd] df

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
  let n = H * T * hd;
  let idx = gid.x + gid.y * nwg.x * WG; // [h, t, e]
  if (idx >= n) { return; }
  let e = idx % hd;
  let t = (idx / hd) % T;
  let h = idx / (T * hd);
  let src = (t * H + h) * 3u * hd; // qkv[t, h, 0, 0]
  out[idx] = rotate(src, e, t);
  out[n + idx] = rotate(src + hd, e, t);
  out[2u * n + idx] = qkv[src + 2u * hd + e];
}
