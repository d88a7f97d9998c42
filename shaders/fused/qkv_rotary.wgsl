// Fused QKV projection + bias + head split + partial rotary (GPT-NeoX, rotate-half), on the shared GEMM core
// (common/gemm_core.wgsl). The projection is qkv[T, 3d] = x[T, K] · W[3d, K]^T + b[3d] with HF's fused row
// layout per token [H, 3, hd] (d = H·hd = K); the outputs are q, k, v each [H, T, hd] (what attention
// reads), the first r dims of q and k rotated with the cos/sin tables [T, r/2]:
//   out[e] = y[e]·cos_i − y[e + r/2]·sin_i,  out[e + r/2] = y[e + r/2]·cos_i + y[e]·sin_i   (e = i < r/2).
//
// Rotary partners without a workgroup exchange: the GEMM runs over a permuted ("virtual") column order in
// which each rotary pair is adjacent. Each (head, q|k|v) segment gets hdE = hd rounded up to even virtual
// columns (an odd hd leaves one padding column, computed as zeros and never written); inside a q or k
// segment virtual column u < r holds dim u/2 + (u % 2)·r/2, so the pair (i, i + r/2) sits at (2i, 2i + 1);
// every other virtual column u holds dim u. gemm_w_row() applies this permutation when the core stages W,
// so it costs nothing in the inner loop. Block starts are multiples of 4 and each thread owns groups of 4
// consecutive tile columns (gemm_col), so an even virtual column and its odd neighbour — a pair — land in
// the same thread's registers, whatever hd and the tile sizes are (no tile alignment to heads needed).
// Each output is rounded once by st(), after the rotation (done in f32 on the unrounded projection).
// The GEMM's M is T and its N the 3·H·hdE virtual columns. Grid: (ceil(3·H·hdE / BN), ceil(T / BM)) workgroups
// of GEMM_THREADS threads; the entry point is the core's, which hands this file's epilogue 4 consecutive
// virtual columns (two whole pairs) at a time.
// Positions (KV-cache decoding): GEMM row t is the token at position p0 + t (its cos/sin row); q is written at
// row t of [H, T, hd], k and v at row p0 + t of [H, KT, hd] (the cache). A whole forward is p0 = 0, KT = T. The
// projection of a row does not depend on the other rows (each output sums over K in the same order), so a
// decoded row is bit-identical to that row of a whole forward.

struct Params { M: u32, N: u32, K: u32, k_chunk: u32, H: u32, hd: u32, r: u32, has_bias: u32, p0: u32, KT: u32 }

@group(0) @binding(0) var<uniform> params: Params;                // M = T rows, N = 3·H·hdE virtual columns
@group(0) @binding(1) var<storage, read> b: array<f32>;       // [H, 3, hd] = [3d] (a dummy when has_bias = 0)
@group(0) @binding(2) var<storage, read> cos_t: array<f32>;   // [>= p0 + T, r/2]
@group(0) @binding(3) var<storage, read> sin_t: array<f32>;   // [>= p0 + T, r/2]
@group(0) @binding(4) var<storage, read_write> q: array<f32>; // [H, T, hd]
@group(0) @binding(5) var<storage, read_write> k: array<f32>; // [H, KT, hd]
@group(0) @binding(6) var<storage, read_write> v: array<f32>; // [H, KT, hd]
// x [T, K], w (f32 bits or packed f16, [H, 3, hd, K] = [3d, K]), workspace: declared by the core
const GEMM_IN: u32 = 7u;

// Teaching fault: GPT-J's interleaved convention, pairs (2i, 2i + 1), instead of rotate-half.
override FAULT_GPTJ_ROTARY: bool = false;
// Teaching fault (decode only): a single-row step of a KV-cache decode (M = 1 at p0 > 0) rotates its query and
// key as position 0, forgetting its offset; the prompt (p0 = 0) is exact.
override FAULT_DECODE_ROTARY: bool = false;

/** Virtual columns per (head, q|k|v) segment: hd rounded up to even. */
fn qkv_seg_cols() -> u32 {
  return params.hd + (params.hd & 1u);
}

/** Virtual column n -> the W row (= qkv column, [H, 3, hd] flattened) it computes, or GEMM_NONE. */
fn gemm_w_row(n: u32) -> u32 {
  let seg = n / qkv_seg_cols(); // h·3 + (0 q | 1 k | 2 v)
  let u = n % qkv_seg_cols();
  var e = u;
  if (seg % 3u < 2u && u < params.r && !FAULT_GPTJ_ROTARY) {
    e = u / 2u + (u % 2u) * (params.r / 2u);
  }
  if (seg >= 3u * params.H || e >= params.hd) {
    return GEMM_NONE;
  }
  return seg * params.hd + e;
}

fn qkv_bias(col: u32) -> f32 {
  if (params.has_bias != 0u && col < 3u * params.H * params.hd) {
    return b[col];
  }
  return 0.0;
}

/** Writes head-split element (s: 0 q, 1 k, 2 v) at index o of q [H, T, hd] or k, v [H, KT, hd] (in range by
 * construction). */
fn qkv_store(s: u32, o: u32, val: f32) {
  if (o >= params.H * select(params.KT, params.M, s == 0u) * params.hd) {
    return;
  }
  if (s == 0u) {
    q[o] = st(val);
  } else if (s == 1u) {
    k[o] = st(val);
  } else {
    v[o] = st(val);
  }
}

/** Row t, virtual columns n .. n + 3 (two whole pairs) of x·W^T (f32 sums). */
fn gemm_epilogue(t: u32, n: u32, vals: vec4f) {
  let half = params.r / 2u;
  // Columns j, j + 1 are virtual columns n0 (even), n0 + 1: the same segment, a rotary pair if u0 < r.
  for (var j = 0u; j < 4u; j += 2u) {
    let n0 = n + j;
    if (n0 >= params.N) {
      continue;
    }
    let seg = n0 / qkv_seg_cols();
    let s = seg % 3u;
    let u0 = n0 % qkv_seg_cols();
    let pos = params.p0 + t;
    // q[h, t, 0] or k|v[h, pos, 0]; + (W row − seg·hd) = that row's element e
    let dst = select((seg / 3u) * params.KT + pos, (seg / 3u) * params.M + t, s == 0u) * params.hd;
    let col0 = seg * params.hd; // the segment's first W row
    let c0 = gemm_w_row(n0);
    let c1 = gemm_w_row(n0 + 1u);
    let y0 = vals[j] + qkv_bias(c0);
    let y1 = vals[j + 1u] + qkv_bias(c1);
    if (s < 2u && u0 < params.r) {
      // Rotary pair (c0, c1) = dims (i, i + r/2) (GPT-J fault: (2i, 2i + 1)), frequency i = u0 / 2.
      let rpos = select(pos, t, FAULT_DECODE_ROTARY && params.M == 1u && params.p0 > 0u);
      let f = rpos * half + u0 / 2u;
      let cs = cos_t[f];
      let sn = sin_t[f];
      qkv_store(s, dst + c0 - col0, y0 * cs - y1 * sn);
      qkv_store(s, dst + c1 - col0, y1 * cs + y0 * sn);
    } else {
      if (c0 != GEMM_NONE) {
        qkv_store(s, dst + c0 - col0, y0);
      }
      if (c1 != GEMM_NONE) {
        qkv_store(s, dst + c1 - col0, y1);
      }
    }
  }
}
