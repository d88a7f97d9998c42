// Shared GEMM core of the fused linear kernels: one workgroup computes a BM×BN block of
//   y[M, N] = x[M, K] · W[N, K]^T          (PyTorch nn.Linear weight layout, both row-major)
// and hands each thread's TM×TN register tile to the kernel file's epilogue, four columns at a time. The
// entry point lives here, once; a kernel file (shaders/fused/linear_*.wgsl, qkv_rotary.wgsl) is only its
// bindings and two hooks. The same kernel file also compiles against common/gemm_reduce.wgsl, the split-K
// reduction, which calls the same epilogue on the summed partials.
//
// Contract with the kernel file (WGSL has no includes: precision.wgsl, weights.wgsl, this file, gemm_load.wgsl,
// the whole/split file and the kernel file are concatenated; module-scope names may be used before their
// declaration):
// - `params` (binding 0) is a uniform struct that begins with `M: u32, N: u32, K: u32, k_chunk: u32`:
//   the output is [M, N] (N in tile columns), K the reduction length, k_chunk the K range of one split
//   (a multiple of BK; ≥ K when the GEMM is not split);
// - the kernel file's own bindings come next, and `const GEMM_IN: u32` names the first binding after them:
//   gemm_load.wgsl declares x (GEMM_IN) and w (GEMM_IN + 1);
// - `fn gemm_w_row(n: u32) -> u32`: the W row that tile column n computes (identity for a plain linear, a
//   permutation for qkv_rotary), or GEMM_NONE for a padding column (loads zeros);
// - `fn gemm_epilogue(m: u32, n: u32, v: vec4f)`: the f32 sums of row m, tile columns n .. n + 3 (n a
//   multiple of 4, m < M, n < N; columns ≥ N are the epilogue's to skip). It applies bias, activation,
//   residual, rotary, and rounds each output once with st().
// One of two small files follows this one: common/gemm_whole.wgsl (const GEMM_SPLIT = false: the epilogue
// runs here) or common/gemm_split.wgsl (const GEMM_SPLIT = true, the workspace at GEMM_IN + 2): then the grid's
// z index is the split s, the workgroup sums k in [s·k_chunk, (s+1)·k_chunk) ∩ [0, K) and gemm_store_partial()
// keeps the raw sums (accumulators, not activations: no st()) in the workspace [S, M, N];
// common/gemm_reduce.wgsl adds the S partials (through acc()) and calls the epilogue.
//
// The global loads (bindings x, w; GemmLoads, GemmRows, gemm_w_rows(), gemm_fetch_x(), gemm_fetch_w(),
// gemm_stage()) live in common/gemm_load.wgsl, which follows this file.
//
// Design (the classic register-blocked SGEMM, sized for WebGPU's default limits):
// - GEMM_THREADS = (BM/TM)·(BN/TN) threads in a TY × TX grid; each warp of 32 covers a 4 × 8 patch of it
//   (GEMM_WY × GEMM_WX), so one k step of a warp reads 8 distinct vec4s of W and 4 of x from workgroup
//   memory (128 + 64 bytes) rather than 16 + 2 with a 2 × 16 row of threads.
// - Per K step of BK, the workgroup stages x[block_m.., k0..k0+BK) and W[rows.., k0..k0+BK) into workgroup
//   memory. Global loads are coalesced along K (consecutive threads read consecutive k of one row) and
//   bounds-checked (zeros outside).
// - The staged tiles are transposed so that for a fixed k a thread's TM rows and TN columns are whole vec4s,
//   in groups: gemm_xs[(buf·BK/8 + k/8)·BM/4 + row/4][k % 8][row % 4] (W likewise), each group of 4 rows ×
//   8 k padded by one vec4 (144 bytes). Why this shape: Dawn's robustness clamps every dynamic index of an
//   array (min(i, len − 1)), and the inner loop's index is then kk-independent — the outer index depends on
//   the thread and the K step only, the inner one (kk % 8) is a constant once the loop is unrolled — so the
//   clamps and the address arithmetic leave the inner loop (a flat [BK][BM + pad] array, as before, put a
//   clamp and an address computation on every workgroup load: on an H100 the 128×128×8 tiles took 25 %
//   less time with robustness off; now the best tiles run within 2 % of their robustness-off time).
//   Banks: a vec4 load of 8 consecutive threads spans 8 groups 144 bytes apart (banks 4v mod 32: distinct);
//   the transposing scalar stores of a warp (4 rows × 8 k) are 32 consecutive words.
// - The register tile is made of 4×4 groups interleaved over the block: rows ty·4 + g·TY·4 + (0..3),
//   g < TM/4 (columns likewise with TX), so eight consecutive threads read eight consecutive vec4s of
//   workgroup memory (no bank conflicts), and each k costs TM/4 + TN/4 vec4 loads for TM·TN FMAs.
// - Register prefetch: the next K step's global loads are issued before the current step's FMAs, so their
//   latency is hidden. GEMM_BUFS = 2 double-buffers the workgroup tiles as well (one barrier per K step
//   instead of two; slower at 128×128 on an H200, faster for the small 32×64 tiles).
// - Every accumulate step goes through acc() (fp16-accumulation emulation; the identity otherwise).
// Measured: bench/RESULTS.md, "GEMM core (issue 21, 2026-11-25)". Other cores keep this contract and so these
// bits: common/gemm_plain.wgsl (no barriers, CPU adapters), common/gemm_gemv.wgsl (decode steps) and
// common/gemm_subgroup.wgsl (fragments passed by subgroup shuffles; slower on Hopper, see bench/RESULTS.md).
// Constraints (checked by src/kernels/gemm.ts): TM, TN ∈ {4, 8}; BM, BN multiples of 32; BK a multiple of 8;
// TY a multiple of GEMM_WY; GEMM_THREADS ≤ the device's limit (256 by default); BM·BK and BN·BK multiples of
// GEMM_THREADS with at most GEMM_LOADS_MAX elements per thread; workgroup memory
// 4.5·BK·(BM + BN)·GEMM_BUFS bytes ≤ the device's limit (16384 by default).

override BM: u32 = 128; // rows of x (tokens) per workgroup
override BN: u32 = 128; // output columns (rows of W) per workgroup
override BK: u32 = 8; // K per staging step
override TM: u32 = 8; // rows per thread (4 or 8)
override TN: u32 = 8; // columns per thread (4 or 8)
override GEMM_BUFS: u32 = 1; // 1: single-buffered workgroup tiles, 2: double-buffered
// Workgroup order (the bits do not depend on it): > 1 walks GEMM_GROUP_M row blocks of one column block before the
// next column block (consecutive workgroups share their W tile in the L2), instead of every column block of a row
// block first; 1, the grid's own order.
override GEMM_GROUP_M: u32 = 1;
// Teaching fault: the x tile is staged from column k + 2 instead of k (a misaligned tile load).
override FAULT_TILE_OFFSET: bool = false;

override GEMM_TX: u32 = BN / TN; // threads along N
override GEMM_TY: u32 = BM / TM; // threads along M
override GEMM_THREADS: u32 = GEMM_TX * GEMM_TY;
override GEMM_WX: u32 = min(GEMM_TX, 8u); // a warp's threads along N
override GEMM_WY: u32 = 32u / GEMM_WX; // a warp's threads along M

const GEMM_NONE: u32 = 0xffffffffu;

const GEMM_TN_VECS: u32 = 2u; // vec4s per register-tile row (TN ≤ 8)
const GEMM_LOADS_MAX: u32 = 16u; // staged elements per thread and K step, per operand

/** A thread's register tile: [TM ≤ 8][TN ≤ 8] as [8][2] vec4s; element (i, j) = [i * 2 + j / 4][j % 4]. */
alias GemmTile = array<vec4f, 16>;

/** 8 k × 4 rows of a staged tile, [k][row] as vec4s of 4 rows, and one vec4 of padding. */
alias GemmGroup = array<vec4f, 9>;

var<workgroup> gemm_xs: array<GemmGroup, GEMM_BUFS * (BK / 8u) * (BM / 4u)>; // [BUFS][BK/8][BM/4] x
var<workgroup> gemm_ws: array<GemmGroup, GEMM_BUFS * (BK / 8u) * (BN / 4u)>; // [BUFS][BK/8][BN/4] W

/** Stages x[row, k] of the block (row < BM, k < BK) into workgroup buffer buf. */
fn gemm_put_x(buf: u32, k: u32, row: u32, v: f32) {
  gemm_xs[(buf * (BK / 8u) + k / 8u) * (BM / 4u) + row / 4u][k % 8u][row % 4u] = v;
}

/** Stages W[row, k] of the block (row < BN, k < BK) into workgroup buffer buf. */
fn gemm_put_w(buf: u32, k: u32, row: u32, v: f32) {
  gemm_ws[(buf * (BK / 8u) + k / 8u) * (BN / 4u) + row / 4u][k % 8u][row % 4u] = v;
}

/** Thread lid's column in the TY × TX thread grid: warps are GEMM_WY × GEMM_WX patches of it. */
fn gemm_tx(lid: u32) -> u32 {
  let warp = lid / (GEMM_WX * GEMM_WY);
  return (warp % (GEMM_TX / GEMM_WX)) * GEMM_WX + lid % GEMM_WX;
}

/** Thread lid's row in the TY × TX thread grid. */
fn gemm_ty(lid: u32) -> u32 {
  let warp = lid / (GEMM_WX * GEMM_WY);
  return (warp / (GEMM_TX / GEMM_WX)) * GEMM_WY + (lid % (GEMM_WX * GEMM_WY)) / GEMM_WX;
}

/** Block-local row of register-tile row i of thread lid. */
fn gemm_row(lid: u32, i: u32) -> u32 {
  return (i / 4u) * GEMM_TY * 4u + gemm_ty(lid) * 4u + i % 4u;
}

/** Block-local column of register-tile column j of thread lid. */
fn gemm_col(lid: u32, j: u32) -> u32 {
  return (j / 4u) * GEMM_TX * 4u + gemm_tx(lid) * 4u + j % 4u;
}

/** One accumulate step of 4 outputs: s + a·b, each through acc(). */
fn gemm_fma(s: vec4f, a: f32, b: vec4f) -> vec4f {
  let t = s + a * b;
  return vec4f(acc(t.x), acc(t.y), acc(t.z), acc(t.w));
}

/**
 * This thread's TM×TN tile of x·W^T for the block at (block_m, block_n), summed over k in [k_begin, k_end):
 * x rows [block_m, block_m + BM) ∩ [0, M), tile columns [block_n, block_n + BN) ∩ [0, N) mapped to W rows by
 * gemm_w_row(). k_begin is a multiple of BK and k_end is K or a multiple of BK, so every staged k below K
 * lies in the range (loads are bounds-checked against K alone, as the teaching fault's shifted load was).
 * Must be called in uniform control flow (it has barriers) by every thread of the workgroup.
 */
fn gemm_tile(block_m: u32, block_n: u32, lid: u32, M: u32, N: u32, K: u32, k_begin: u32, k_end: u32) -> GemmTile {
  let tx = gemm_tx(lid);
  let ty = gemm_ty(lid);
  // The W rows this thread stages are the same at every K step: map them once.
  let rows = gemm_w_rows(block_n, lid, N);
  var sum: GemmTile;
  var xr = gemm_fetch_x(block_m, lid, M, K, k_begin);
  var wr = gemm_fetch_w(rows, lid, K, k_begin);
  gemm_stage(lid, 0u, xr, wr);
  workgroupBarrier();
  for (var k0 = k_begin; k0 < k_end; k0 += BK) {
    let buf = ((k0 - k_begin) / BK) % GEMM_BUFS;
    let more = k0 + BK < k_end;
    if (more) {
      // Prefetch the next step; the loads are in flight during the FMAs below.
      xr = gemm_fetch_x(block_m, lid, M, K, k0 + BK);
      wr = gemm_fetch_w(rows, lid, K, k0 + BK);
    }
    for (var kk = 0u; kk < BK; kk++) {
      let xo = (buf * (BK / 8u) + kk / 8u) * (BM / 4u) + ty; // this k's group of the thread's first 4 rows
      let wo = (buf * (BK / 8u) + kk / 8u) * (BN / 4u) + tx;
      // x[rows of this thread, k] and W[columns of this thread, k]; a1, b1 only with TM, TN = 8.
      let a0 = gemm_xs[xo][kk % 8u];
      let b0 = gemm_ws[wo][kk % 8u];
      var a1 = vec4f();
      var b1 = vec4f();
      if (TM == 8u) {
        a1 = gemm_xs[xo + GEMM_TY][kk % 8u];
      }
      if (TN == 8u) {
        b1 = gemm_ws[wo + GEMM_TX][kk % 8u];
      }
      // Written out with constant indices: a register tile indexed by loop counters gets a robustness clamp
      // on every access, and the driver then kept it out of registers (8×8 tiles ran 36 % slower).
      sum[0] = gemm_fma(sum[0], a0.x, b0);
      sum[2] = gemm_fma(sum[2], a0.y, b0);
      sum[4] = gemm_fma(sum[4], a0.z, b0);
      sum[6] = gemm_fma(sum[6], a0.w, b0);
      if (TM == 8u) {
        sum[8] = gemm_fma(sum[8], a1.x, b0);
        sum[10] = gemm_fma(sum[10], a1.y, b0);
        sum[12] = gemm_fma(sum[12], a1.z, b0);
        sum[14] = gemm_fma(sum[14], a1.w, b0);
      }
      if (TN == 8u) {
        sum[1] = gemm_fma(sum[1], a0.x, b1);
        sum[3] = gemm_fma(sum[3], a0.y, b1);
        sum[5] = gemm_fma(sum[5], a0.z, b1);
        sum[7] = gemm_fma(sum[7], a0.w, b1);
        if (TM == 8u) {
          sum[9] = gemm_fma(sum[9], a1.x, b1);
          sum[11] = gemm_fma(sum[11], a1.y, b1);
          sum[13] = gemm_fma(sum[13], a1.z, b1);
          sum[15] = gemm_fma(sum[15], a1.w, b1);
        }
      }
    }
    if (GEMM_BUFS == 1u) {
      workgroupBarrier(); // everyone is done reading before the single buffer is overwritten
    }
    if (more) {
      gemm_stage(lid, (buf + 1u) % GEMM_BUFS, xr, wr);
    }
    workgroupBarrier();
  }
  return sum;
}

/**
 * The fused GEMM: one BM×BN block per workgroup; with GEMM_SPLIT, split s = wid.z of the K range.
 * Grid: (ceil(N / BN), ceil(M / BM), S) workgroups of GEMM_THREADS threads (S = 1 unless split).
 */
@compute @workgroup_size(GEMM_THREADS)
fn main(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) groups: vec3u,
) {
  let M = params.M;
  let N = params.N;
  let K = params.K;
  var bm = wid.y;
  var bn = wid.x;
  if (GEMM_GROUP_M > 1u) {
    // Workgroup number p in the grid's order -> GEMM_GROUP_M row blocks (fewer in the last group) per column block.
    let p = wid.y * groups.x + wid.x;
    let in_group = GEMM_GROUP_M * groups.x;
    let first = (p / in_group) * GEMM_GROUP_M;
    let rows = min(groups.y - first, GEMM_GROUP_M);
    bm = first + (p % in_group) % rows;
    bn = (p % in_group) / rows;
  }
  let block_m = bm * BM;
  let block_n = bn * BN;
  let k_begin = wid.z * params.k_chunk;
  let k_end = min(K, k_begin + params.k_chunk);
  var tile = gemm_tile(block_m, block_n, lid, M, N, K, k_begin, k_end);
  for (var i = 0u; i < TM; i++) {
    let m = block_m + gemm_row(lid, i);
    for (var g = 0u; g < TN / 4u; g++) {
      let n = block_n + gemm_col(lid, g * 4u); // a multiple of 4; columns n .. n + 3 are this thread's
      if (m >= M || n >= N) {
        continue;
      }
      let v = tile[i * GEMM_TN_VECS + g];
      if (GEMM_SPLIT) {
        gemm_store_partial(wid.z, m, n, v);
      } else {
        gemm_epilogue(m, n, v);
      }
    }
  }
}
