// Global loads of the fused GEMM core (common/gemm_core.wgsl), one f32 at a time: any K, any binding offset,
// f32 or packed-f16 W (load_w, common/weights.wgsl), and the teaching fault FAULT_TILE_OFFSET. (Loads of a
// vec4 along K were measured too, 2026-11-25 on an H100: slower at 155 of 157 tile configurations and shapes
// under Dawn's robustness; bench/RESULTS.md "GEMM core".)
// Layout of a staged [rows][BK] tile over the threads: element idx -> k % 8 fastest, then row, then k / 8, so
// each run of 8 consecutive threads reads 8 consecutive k of one row (one 32-byte sector): coalesced along K.

@group(0) @binding(GEMM_IN) var<storage, read> x: array<f32>; // [M, K]
@group(0) @binding(GEMM_IN + 1u) var<storage, read> w: array<u32>; // f32 bits or packed f16 (load_w), rows of K

alias GemmLoads = array<f32, GEMM_LOADS_MAX>;
alias GemmRows = array<u32, GEMM_LOADS_MAX>;

/** Staged element idx of a [rows][BK] tile -> (row, k): k % 8 fastest, then row, then k / 8. */
fn gemm_stage_row(idx: u32, rows: u32) -> u32 {
  return (idx / 8u) % rows;
}

fn gemm_stage_k(idx: u32, rows: u32) -> u32 {
  return (idx / (8u * rows)) * 8u + idx % 8u;
}

/** The W rows (gemm_w_row; GEMM_NONE past N) of the elements this thread stages: the same at every K step. */
fn gemm_w_rows(block_n: u32, lid: u32, N: u32) -> GemmRows {
  var rows: GemmRows;
  for (var l = 0u; l < BN * BK / GEMM_THREADS; l++) {
    let n = block_n + gemm_stage_row(lid + l * GEMM_THREADS, BN);
    rows[l] = GEMM_NONE;
    if (n < N) {
      rows[l] = gemm_w_row(n);
    }
  }
  return rows;
}

/** The x values [block_m.., k0..k0+BK) this thread stages: zeros outside [M, K]. */
fn gemm_fetch_x(block_m: u32, lid: u32, M: u32, K: u32, k0: u32) -> GemmLoads {
  var r: GemmLoads;
  let shift = select(0u, 2u, FAULT_TILE_OFFSET);
  for (var l = 0u; l < BM * BK / GEMM_THREADS; l++) {
    let idx = lid + l * GEMM_THREADS;
    let m = block_m + gemm_stage_row(idx, BM);
    let k = k0 + gemm_stage_k(idx, BM) + shift;
    if (m < M && k < K) {
      r[l] = x[m * K + k];
    }
  }
  return r;
}

/** The W values of rows `rows` (GEMM_NONE: zeros), columns [k0, k0+BK) ∩ [0, K), this thread stages. */
fn gemm_fetch_w(rows: GemmRows, lid: u32, K: u32, k0: u32) -> GemmLoads {
  var r: GemmLoads;
  for (var l = 0u; l < BN * BK / GEMM_THREADS; l++) {
    let k = k0 + gemm_stage_k(lid + l * GEMM_THREADS, BN);
    if (rows[l] != GEMM_NONE && k < K) {
      r[l] = load_w(rows[l] * K + k);
    }
  }
  return r;
}

/** Stores the fetched values into workgroup buffer `buf` (see gemm_put_x / gemm_put_w). */
fn gemm_stage(lid: u32, buf: u32, xr: GemmLoads, wr: GemmLoads) {
  for (var l = 0u; l < BM * BK / GEMM_THREADS; l++) {
    let idx = lid + l * GEMM_THREADS;
    gemm_put_x(buf, gemm_stage_k(idx, BM), gemm_stage_row(idx, BM), xr[l]);
  }
  for (var l = 0u; l < BN * BK / GEMM_THREADS; l++) {
    let idx = lid + l * GEMM_THREADS;
    gemm_put_w(buf, gemm_stage_k(idx, BN), gemm_stage_row(idx, BN), wr[l]);
  }
}
