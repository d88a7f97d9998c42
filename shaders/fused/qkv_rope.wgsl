// Fused q/k/v projection + bias + head split + rotary of the Llama family (HF q_proj, k_proj, v_proj, then
// apply_rotary_pos_emb, rotate-half), on the shared GEMM core (common/gemm_core.wgsl): one GEMM over the three
// weights concatenated, W = [Wq; Wk; Wv] ([(H + 2·KV)·hd, K]: q rows h·hd + e, then k rows (H + j)·hd + e, then v
// rows (H + KV + j)·hd + e) and b = [bq; bk; bv] (Qwen2; Llama's attention_bias). Outputs q [H, T, hd] and k, v
// [KV, KT, hd] (what the attention reads), the first r dims of each q and k head rotated with the cos/sin tables
// [>= p0 + T, r/2] (from the model's inv_freq: theta and rope_scaling are only the table):
//   out[e] = y[e]·cos_i − y[e + r/2]·sin_i,  out[e + r/2] = y[e + r/2]·cos_i + y[e]·sin_i   (e = i < r/2).
// As qkv_rotary.wgsl (GPT-NeoX) does, the GEMM runs over a permuted ("virtual") column order in which each rotary
// pair is adjacent: segment s (q heads 0..H-1, then k heads, then v heads) has hdE = hd rounded up to even virtual
// columns; inside a q or k segment virtual column u < r holds dim u/2 + (u % 2)·r/2, so the pair (i, i + r/2) sits
// at (2i, 2i + 1) in one thread's group of four; elsewhere u holds dim u (an odd hd's padding column: zeros, never
// written). Each output is rounded once by st(), after the rotation (in f32 on the unrounded projection).
// Qwen3's q/k norms come between the projection and the rotary, so this kernel is for the flavours without them.
// Positions (KV-cache decoding): GEMM row t is the token at position p0 + t; q is written at row t of [H, T, hd],
// k and v at row p0 + t of [KV, KT, hd]. A whole forward is p0 = 0, KT = T.
// Teaching fault: FAULT_GPTJ_ROTARY rotates GPT-J's interleaved pairs (2i, 2i + 1) instead of rotate-half.

struct Params { M: u32, N: u32, K: u32, k_chunk: u32, H: u32, KV: u32, hd: u32, r: u32, has_bias: u32, p0: u32, KT: u32 }

@group(0) @binding(0) var<uniform> params: Params;                // M = T rows, N = (H + 2·KV)·hdE virtual columns
@group(0) @binding(1) var<storage, read> b: array<f32>;       // [(H + 2·KV)·hd] (a dummy when has_bias = 0)
@group(0) @binding(2) var<storage, read> cos_t: array<f32>;   // [>= p0 + T, r/2]
@group(0) @binding(3) var<storage, read> sin_t: array<f32>;   // [>= p0 + T, r/2]
@group(0) @binding(4) var<storage, read_write> q: array<f32>; // [H, T, hd]
@group(0) @binding(5) var<storage, read_write> k: array<f32>; // [KV, KT, hd]
@group(0) @binding(6) var<storage, read_write> v: array<f32>; // [KV, KT, hd]
// x [T, K], w (f32 bits or packed f16, [(H + 2·KV)·hd, K]), workspace: declared by the core
const GEMM_IN: u32 = 7u;

override FAULT_GPTJ_ROTARY: bool = false;

/** Virtual columns per head segment: hd rounded up to even. */
fn seg_cols() -> u32 {
  return params.hd + (params.hd & 1u);
}

/** 0 for a q segment, 1 for k, 2 for v. */
fn seg_part(seg: u32) -> u32 {
  return select(select(2u, 1u, seg < params.H + params.KV), 0u, seg < params.H);
}

/** Virtual column n -> the W row it computes (segment·hd + dim), or GEMM_NONE (an odd hd's padding, past N). */
fn gemm_w_row(n: u32) -> u32 {
  let seg = n / seg_cols();
  let u = n % seg_cols();
  var e = u;
  if (seg_part(seg) < 2u && u < params.r && !FAULT_GPTJ_ROTARY) {
    e = u / 2u + (u % 2u) * (params.r / 2u);
  }
  if (seg >= params.H + 2u * params.KV || e >= params.hd) {
    return GEMM_NONE;
  }
  return seg * params.hd + e;
}

fn qkv_bias(row: u32) -> f32 {
  if (params.has_bias != 0u && row != GEMM_NONE) {
    return b[row];
  }
  return 0.0;
}

/** Element e of segment seg's head at row t (q) or position p0 + t (k, v). */
fn qkv_store(seg: u32, t: u32, e: u32, val: f32) {
  let part = seg_part(seg);
  if (part == 0u) {
    q[(seg * params.M + t) * params.hd + e] = st(val);
    return;
  }
  let j = seg - params.H - select(params.KV, 0u, part == 1u); // the KV head
  let o = (j * params.KT + params.p0 + t) * params.hd + e;
  if (part == 1u) {
    k[o] = st(val);
  } else {
    v[o] = st(val);
  }
}

/** Row t, virtual columns n .. n + 3 (two whole pairs) of x·W^T (f32 sums). */
fn gemm_epilogue(t: u32, n: u32, vals: vec4f) {
  let half = params.r / 2u;
  for (var j = 0u; j < 4u; j += 2u) {
    let n0 = n + j;
    if (n0 >= params.N) {
      continue;
    }
    let seg = n0 / seg_cols();
    let u0 = n0 % seg_cols();
    let c0 = gemm_w_row(n0);
    let c1 = gemm_w_row(n0 + 1u);
    let y0 = vals[j] + qkv_bias(c0);
    let y1 = vals[j + 1u] + qkv_bias(c1);
    let col0 = seg * params.hd; // the segment's first W row
    if (seg_part(seg) < 2u && u0 < params.r) {
      // Rotary pair (c0, c1) = dims (i, i + r/2) (GPT-J fault: (2i, 2i + 1)), frequency i = u0 / 2.
      let f = (params.p0 + t) * half + u0 / 2u;
      let cs = cos_t[f];
      let sn = sin_t[f];
      qkv_store(seg, t, c0 - col0, y0 * cs - y1 * sn);
      qkv_store(seg, t, c1 - col0, y1 * cs + y0 * sn);
    } else {
      if (c0 != GEMM_NONE) {
        qkv_store(seg, t, c0 - col0, y0);
      }
      if (c1 != GEMM_NONE) {
        qkv_store(seg, t, c1 - col0, y1);
      }
    }
  }
}
