// Global loads of the fused GEMM core (common/gemm_core.wgsl), four consecutive k at a time (one 16-byte load
// of x, one of f32 W or 8 bytes of packed-f16 W), for K % 4 == 0 (packed f16: K % 8 == 0, so every row and
// the whole binding are a whole number of vec4<u32>). The launcher (src/kernels/fused-linear.ts) picks this
// file or common/gemm_load_scalar.wgsl; both stage the same values into the same workgroup tiles, so the sums
// are bit-identical. No teaching fault here (the launcher runs FAULT_TILE_OFFSET on the scalar loads).
// Layout of a staged [rows][BK] tile over the threads: vec4 idx -> k / 4 fastest, then row, so the BK/4
// consecutive threads of one row read BK consecutive floats (32 or 64 bytes): coalesced along K.

@group(0) @binding(GEMM_IN) var<storage, read> x: array<vec4f>; // [M, K / 4]
@group(0) @binding(GEMM_IN + 1u) var<storage, read> w: array<vec4u>; // f32 bits or packed f16, rows of K

const GEMM_VECS_MAX: u32 = GEMM_LOADS_MAX / 4u;
alias GemmLoads = array<vec4f, GEMM_VECS_MAX>;
alias GemmRows = array<u32, GEMM_VECS_MAX>;

/** Loads of one operand of `rows` rows per thread and K step (the last may be partial: see gemm_vec_ok). */
fn gemm_vecs(rows: u32) -> u32 {
  return (rows * BK / 4u + GEMM_THREADS - 1u) / GEMM_THREADS;
}

/** Whether vec4 idx lies in a [rows][BK] tile (fewer vec4s than threads leave some threads without). */
fn gemm_vec_ok(idx: u32, rows: u32) -> bool {
  return idx < rows * BK / 4u;
}

/** The W rows (gemm_w_row; GEMM_NONE past N) of the vec4s this thread stages: the same at every K step. */
fn gemm_w_rows(block_n: u32, lid: u32, N: u32) -> GemmRows {
  var rows: GemmRows;
  for (var l = 0u; l < gemm_vecs(BN); l++) {
    let n = block_n + (lid + l * GEMM_THREADS) / (BK / 4u);
    rows[l] = GEMM_NONE;
    if (n < N) {
      rows[l] = gemm_w_row(n);
    }
  }
  return rows;
}

/** W[i .. i + 3] (i % 4 == 0) as f32. */
fn load_w4(i: u32) -> vec4f {
  if (W_F16) {
    let v = w[i >> 3u]; // elements i & ~7 .. + 7, two per word
    let h = select(v.xy, v.zw, (i & 4u) != 0u);
    return vec4f(unpack2x16float(h.x), unpack2x16float(h.y));
  }
  return bitcast<vec4f>(w[i >> 2u]);
}

/** The x values [block_m.., k0..k0+BK) this thread stages: zeros outside [M, K]. */
fn gemm_fetch_x(block_m: u32, lid: u32, M: u32, K: u32, k0: u32) -> GemmLoads {
  var r: GemmLoads;
  for (var l = 0u; l < gemm_vecs(BM); l++) {
    let idx = lid + l * GEMM_THREADS;
    let m = block_m + idx / (BK / 4u);
    let k = k0 + (idx % (BK / 4u)) * 4u;
    if (gemm_vec_ok(idx, BM) && m < M && k < K) {
      r[l] = x[(m * K + k) / 4u];
    }
  }
  return r;
}

/** The W values of rows `rows` (GEMM_NONE: zeros), columns [k0, k0+BK) ∩ [0, K), this thread stages. */
fn gemm_fetch_w(rows: GemmRows, lid: u32, K: u32, k0: u32) -> GemmLoads {
  var r: GemmLoads;
  for (var l = 0u; l < gemm_vecs(BN); l++) {
    let idx = lid + l * GEMM_THREADS;
    let k = k0 + (idx % (BK / 4u)) * 4u;
    if (gemm_vec_ok(idx, BN) && rows[l] != GEMM_NONE && k < K) {
      r[l] = load_w4(rows[l] * K + k);
    }
  }
  return r;
}

/** Stores the fetched vec4s into workgroup buffer `buf` (see gemm_put_x / gemm_put_w): 4 k of a row each. */
fn gemm_stage(lid: u32, buf: u32, xr: GemmLoads, wr: GemmLoads) {
  for (var l = 0u; l < gemm_vecs(BM); l++) {
    let idx = lid + l * GEMM_THREADS;
    if (gemm_vec_ok(idx, BM)) {
      for (var c = 0u; c < 4u; c++) {
        gemm_put_x(buf, (idx % (BK / 4u)) * 4u + c, idx / (BK / 4u), xr[l][c]);
      }
    }
  }
  for (var l = 0u; l < gemm_vecs(BN); l++) {
    let idx = lid + l * GEMM_THREADS;
    if (gemm_vec_ok(idx, BN)) {
      for (var c = 0u; c < 4u; c++) {
        gemm_put_w(buf, (idx % (BK / 4u)) * 4u + c, idx / (BK / 4u), wr[l][c]);
      }
    }
  }
}
