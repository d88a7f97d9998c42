// Oracle rotary of the Llama family in double-float (HF apply_rotary_pos_emb, rotate-half over the first r dims of
// each head; r = 0: the head split alone, for v): x [T, heads, hd] (a q, k or v projection's rows) -> out
// [heads, T, hd]. For i < half = r / 2, at position t:
//   out[i] = x[i] cos − x[i + half] sin,   out[i + half] = x[i + half] cos + x[i] sin,   the rest copied;
// the CPU fp64 oracle's order (src/kernels/cpu/rotary.ts ropeHeadsF64). cos, sin: [T, half] df, from the fp64
// angles t · inv_freq[i] (theta and rope_scaling are only that table), computed on the CPU and split into pairs.
// One thread per output element.

struct Params { T: u32, heads: u32, hd: u32, r: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec2<f32>>;         // [T, heads, hd] df
@group(0) @binding(2) var<storage, read> cosv: array<vec2<f32>>;      // [T, r/2] df
@group(0) @binding(3) var<storage, read> sinv: array<vec2<f32>>;      // [T, r/2] df
@group(0) @binding(4) var<storage, read_write> out: array<vec2<f32>>; // [heads, T, hd] df

override DF_FMA: bool = true;
override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let T = params.T;
  let heads = params.heads;
  let hd = params.hd;
  let idx = gid.x + gid.y * nwg.x * WG; // [h, t, e]
  if (idx >= heads * T * hd) { return; }
  let e = idx % hd;
  let t = (idx / hd) % T;
  let h = idx / (T * hd);
  let src = (t * heads + h) * hd; // x[t, h, 0]
  let half = params.r / 2u;
  if (e >= params.r) {
    out[idx] = x[src + e];
  } else if (e < half) {
    let c = cosv[t * half + e];
    let s = sinv[t * half + e];
    out[idx] = df_sub(df_mul(x[src + e], c), df_mul(x[src + e + half], s));
  } else {
    let i = e - half;
    let c = cosv[t * half + i];
    let s = sinv[t * half + i];
    out[idx] = df_add(df_mul(x[src + e], c), df_mul(x[src + i], s));
  }
}
