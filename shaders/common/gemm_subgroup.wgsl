// Subgroup GEMM core of the fused linear kernels: the fragments of x and W pass between the lanes of a subgroup
// by shuffles instead of through workgroup memory. Each subgroup computes its own block of
//   y[M, N] = x[M, K] · W[N, K]^T          (nn.Linear layout, both row-major)
// with no workgroup memory and no barrier, and hands each lane's sums to the kernel file's epilogue four columns
// at a time, or (with common/gemm_split.wgsl) stores them as split wid.z's partial.
// Contract with the kernel file: exactly common/gemm_core.wgsl's (params, GEMM_IN, gemm_w_row, gemm_epilogue).
// Includes: common/subgroups.wgsl (the `enable` directive) first, then precision.wgsl, weights.wgsl, this file,
// the whole/split file and the kernel file; the device must have been created with the `subgroups` feature.
//
// Layout. A subgroup of GEMM_SG lanes is PM × PN lanes (PN = GEMM_SG / PM) and owns PM·TM rows × PN·TN columns.
// - As a consumer, lane (p, q) = (lane / PN, lane % PN) sums rows i·PM + p (i < TM) of the subgroup's block and
//   columns g·4·PN + q·4 + c (g < TN / 4, c < 4): groups of 4 consecutive columns, as the epilogue takes them
//   (qkv_rotary's rotary pairs stay in one lane).
// - As a loader, for one block of k the lane holds x[rows i·PM + lane / PN, k0 + lane % PN] in its TM x registers
//   (PN consecutive lanes read PN consecutive k of one row: coalesced), refreshed every PN k, and W[columns
//   g·4·PN + (lane / PM)·4 + c, k0 + lane % PM] in its TN W registers, refreshed every PM k.
// - At step k, lane (p, q) reads its TM x values from lane p·PN + (k − k0) % PN (x register i of that lane is
//   row i·PM + p) and its TN W values from lane q·PM + (k − k0) % PM: one subgroupShuffle per register, the
//   register index the same in every lane. The next block's registers are loaded one block ahead, and the steps
//   run in blocks of min(PM, PN) k that refresh nothing (a loop of constant length, unrolled by the driver).
// Cost per k and lane: TM + TN shuffled values for TM·TN multiply-adds (a tiled core reads (TM + TN) / 4 vec4s
// of workgroup memory instead), and global loads that only the L1 cache shares between subgroups.
// Measured (bench/RESULTS.md, "Subgroup GEMM core (issue 29 item 1)"): about 3× slower than the tiled core on an
// H200 whatever the layout, and slower than common/gemm_plain.wgsl on SwiftShader; no shipped policy runs it.
//
// Numerics: the same bits as the tiled core (common/gemm_core.wgsl), by construction. There each output is one
// thread's register, started at +0 and advanced by gemm_fma() for k = k_begin, k_begin + 1, … over the split's
// range rounded up to a multiple of BK; x is read at k + 2 under FAULT_TILE_OFFSET, and every load outside
// [0, K) (or of a GEMM_NONE column) is 0. Here the same gemm_fma() steps run in the same order on the same values
// (a shuffle moves a value's bits unchanged); the padding past K would add only +0 · +0, which changes nothing
// but a −0 sum into +0, and that is done once at the end (select, as common/gemm_plain.wgsl does).
// The layout needs subgroups of exactly GEMM_SG consecutive invocations (subgroup_invocation_id = local index
// mod GEMM_SG). Where a device runs others, every sum of such a subgroup is NaN — never a plausible wrong number;
// src/kernels/gemm-subgroup-check.ts checks the core against the tiled core on the device before it is chosen.
// Grid: (ceil(N / GEMM_SG_BN), ceil(M / GEMM_SG_BM), S) workgroups of GEMM_SG_THREADS invocations.

// The x and W bindings, the tiled core's constants and GEMM_NONE: common/gemm_io.wgsl.

override GEMM_SG: u32 = 32; // lanes per subgroup the layout is built for (the device's subgroup size)
override GEMM_SG_PM: u32 = 4; // row phases (a divisor of GEMM_SG)
override GEMM_SG_TM: u32 = 8; // rows per lane (4 or 8)
override GEMM_SG_TN: u32 = 8; // columns per lane (4 or 8)
override GEMM_SG_WM: u32 = 2; // subgroups per workgroup along M
override GEMM_SG_WN: u32 = 2; // subgroups per workgroup along N

override GEMM_SG_PN: u32 = GEMM_SG / GEMM_SG_PM; // column phases; also the k of one x register block
override GEMM_SG_ROWS: u32 = GEMM_SG_PM * GEMM_SG_TM; // rows of a subgroup's block
override GEMM_SG_COLS: u32 = GEMM_SG_PN * GEMM_SG_TN; // columns of a subgroup's block
override GEMM_SG_BM: u32 = GEMM_SG_WM * GEMM_SG_ROWS; // rows of a workgroup's block
override GEMM_SG_BN: u32 = GEMM_SG_WN * GEMM_SG_COLS; // columns of a workgroup's block
override GEMM_SG_THREADS: u32 = GEMM_SG_WM * GEMM_SG_WN * GEMM_SG;

/** A lane's registers of one operand: [TM or TN ≤ 8] as 2 vec4s; entry i = [i / 4][i % 4]. */
alias SgRegs = array<vec4f, 2>;

/** A lane's sums: [TM ≤ 8][TN ≤ 8] as [8][2] vec4s; element (i, j) = [i * 2 + j / 4][j % 4]. */
alias SgTile = array<vec4f, 16>;

/** One accumulate step of 4 outputs: s + a·b, each through acc() (as common/gemm_core.wgsl's). */
fn gemm_fma(s: vec4f, a: f32, b: vec4f) -> vec4f {
  let t = s + a * b;
  return vec4f(acc(t.x), acc(t.y), acc(t.z), acc(t.w));
}

/** x[row, k] as the tiled core stages it: 0 outside [0, M) × [0, K) (k already shifted by the fault). */
fn sg_x(row: u32, k: u32, M: u32, K: u32) -> f32 {
  if (row < M && k < K) {
    return x[row * K + k];
  }
  return 0.0;
}

/** W[row, k]: 0 for a GEMM_NONE column or k outside [0, K). */
fn sg_w(row: u32, k: u32, K: u32) -> f32 {
  if (row != GEMM_NONE && k < K) {
    return load_w(row * K + k);
  }
  return 0.0;
}

/** The x registers of a lane for the block at k0: rows m + i·PM (m = the lane's loader row), k0 + lane % PN. */
fn sg_fetch_x(m: u32, lane: u32, M: u32, K: u32, k0: u32) -> SgRegs {
  let k = k0 + lane % GEMM_SG_PN + select(0u, 2u, FAULT_TILE_OFFSET);
  let s = GEMM_SG_PM;
  var r: SgRegs;
  r[0] = vec4f(sg_x(m, k, M, K), sg_x(m + s, k, M, K), sg_x(m + 2u * s, k, M, K), sg_x(m + 3u * s, k, M, K));
  if (GEMM_SG_TM == 8u) {
    let h = m + 4u * s;
    r[1] = vec4f(sg_x(h, k, M, K), sg_x(h + s, k, M, K), sg_x(h + 2u * s, k, M, K), sg_x(h + 3u * s, k, M, K));
  }
  return r;
}

/** The W registers of a lane for the block at k0: W rows `rows` (its loader columns), k0 + lane % PM. */
fn sg_fetch_w(rows: array<vec4u, 2>, lane: u32, K: u32, k0: u32) -> SgRegs {
  let k = k0 + lane % GEMM_SG_PM;
  var r: SgRegs;
  r[0] = vec4f(sg_w(rows[0].x, k, K), sg_w(rows[0].y, k, K), sg_w(rows[0].z, k, K), sg_w(rows[0].w, k, K));
  if (GEMM_SG_TN == 8u) {
    r[1] = vec4f(sg_w(rows[1].x, k, K), sg_w(rows[1].y, k, K), sg_w(rows[1].z, k, K), sg_w(rows[1].w, k, K));
  }
  return r;
}

/** The W row (gemm_w_row; GEMM_NONE past N) of tile column n. */
fn sg_w_row(n: u32, N: u32) -> u32 {
  if (n < N) {
    return gemm_w_row(n);
  }
  return GEMM_NONE;
}

/**
 * One step k of a lane's sums: its x values from lane `sx`'s x registers, its W values from lane `sw`'s W
 * registers (one shuffle per register), then the TM·TN accumulate steps. Every lane of the subgroup calls it.
 */
fn sg_step(sum: ptr<function, SgTile>, xa: SgRegs, wa: SgRegs, sx: u32, sw: u32) {
  // x[rows of this lane, k] and W[columns of this lane, k]; a1, b1 only with TM, TN = 8.
  let a0 = subgroupShuffle(xa[0], sx);
  let b0 = subgroupShuffle(wa[0], sw);
  var a1 = vec4f();
  var b1 = vec4f();
  if (GEMM_SG_TM == 8u) {
    a1 = subgroupShuffle(xa[1], sx);
  }
  if (GEMM_SG_TN == 8u) {
    b1 = subgroupShuffle(wa[1], sw);
  }
  // Constant indices only (see common/gemm_core.wgsl: a register tile indexed by loop counters leaves registers).
  (*sum)[0] = gemm_fma((*sum)[0], a0.x, b0);
  (*sum)[2] = gemm_fma((*sum)[2], a0.y, b0);
  (*sum)[4] = gemm_fma((*sum)[4], a0.z, b0);
  (*sum)[6] = gemm_fma((*sum)[6], a0.w, b0);
  if (GEMM_SG_TM == 8u) {
    (*sum)[8] = gemm_fma((*sum)[8], a1.x, b0);
    (*sum)[10] = gemm_fma((*sum)[10], a1.y, b0);
    (*sum)[12] = gemm_fma((*sum)[12], a1.z, b0);
    (*sum)[14] = gemm_fma((*sum)[14], a1.w, b0);
  }
  if (GEMM_SG_TN == 8u) {
    (*sum)[1] = gemm_fma((*sum)[1], a0.x, b1);
    (*sum)[3] = gemm_fma((*sum)[3], a0.y, b1);
    (*sum)[5] = gemm_fma((*sum)[5], a0.z, b1);
    (*sum)[7] = gemm_fma((*sum)[7], a0.w, b1);
    if (GEMM_SG_TM == 8u) {
      (*sum)[9] = gemm_fma((*sum)[9], a1.x, b1);
      (*sum)[11] = gemm_fma((*sum)[11], a1.y, b1);
      (*sum)[13] = gemm_fma((*sum)[13], a1.z, b1);
      (*sum)[15] = gemm_fma((*sum)[15], a1.w, b1);
    }
  }
}

/**
 * Lane `lane`'s TM×TN sums of x·W^T for the subgroup block at rows m0.., tile columns n0.., over k in
 * [k_begin, k_end). Must be called in uniform control flow by every lane of the subgroup (it shuffles).
 */
fn sg_tile(m0: u32, n0: u32, lane: u32, M: u32, N: u32, K: u32, k_begin: u32, k_end: u32) -> SgTile {
  let PM = GEMM_SG_PM;
  let PN = GEMM_SG_PN;
  // Loader roles: x rows m0 + i·PM + lane / PN; W columns n0 + g·4·PN + (lane / PM)·4 + c (mapped once).
  let xm = m0 + lane / PN;
  let wn = n0 + (lane / PM) * 4u;
  var rows: array<vec4u, 2>;
  rows[0] = vec4u(sg_w_row(wn, N), sg_w_row(wn + 1u, N), sg_w_row(wn + 2u, N), sg_w_row(wn + 3u, N));
  let wn1 = wn + 4u * PN;
  rows[1] = vec4u(sg_w_row(wn1, N), sg_w_row(wn1 + 1u, N), sg_w_row(wn1 + 2u, N), sg_w_row(wn1 + 3u, N));
  // Consumer role: the lanes holding this lane's rows (row phase p) and columns (column phase q).
  let from_x = (lane / PN) * PN;
  let from_w = (lane % PN) * PM;
  var xa = sg_fetch_x(xm, lane, M, K, k_begin);
  var xn = sg_fetch_x(xm, lane, M, K, k_begin + PN);
  var wa = sg_fetch_w(rows, lane, K, k_begin);
  var wb = sg_fetch_w(rows, lane, K, k_begin + PM);
  var sum: SgTile;
  // Steps in blocks of L = min(PM, PN) k: no register is refreshed inside a block, so its L steps are a loop of
  // constant length (the driver unrolls it); the x registers are refreshed every PN / L blocks, W every PM / L.
  let L = min(PM, PN);
  var k = k_begin;
  while (k + L <= k_end) {
    let t = k - k_begin;
    if (t % PN == 0u && t != 0u) {
      xa = xn;
      xn = sg_fetch_x(xm, lane, M, K, k + PN); // in flight for the next PN steps
    }
    if (t % PM == 0u && t != 0u) {
      wa = wb;
      wb = sg_fetch_w(rows, lane, K, k + PM);
    }
    for (var u = 0u; u < L; u++) {
      sg_step(&sum, xa, wa, from_x + (t + u) % PN, from_w + (t + u) % PM);
    }
    k += L;
  }
  // The last steps (fewer than L), one at a time, with the same refreshes.
  while (k < k_end) {
    let t = k - k_begin;
    if (t % PN == 0u && t != 0u) {
      xa = xn;
      xn = sg_fetch_x(xm, lane, M, K, k + PN);
    }
    if (t % PM == 0u && t != 0u) {
      wa = wb;
      wb = sg_fetch_w(rows, lane, K, k + PM);
    }
    sg_step(&sum, xa, wa, from_x + t % PN, from_w + t % PM);
    k += 1u;
  }
  return sum;
}

/**
 * The fused GEMM: each subgroup one PM·TM × PN·TN block; with GEMM_SPLIT, split s = wid.z of the K range.
 * Grid: (ceil(N / GEMM_SG_BN), ceil(M / GEMM_SG_BM), S) workgroups of GEMM_SG_THREADS invocations.
 */
@compute @workgroup_size(GEMM_SG_THREADS)
fn main(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3u,
  @builtin(subgroup_invocation_id) sg_lane: u32,
  @builtin(subgroup_size) sg_size: u32,
) {
  let M = params.M;
  let N = params.N;
  let K = params.K;
  let lane = lid % GEMM_SG;
  let sg = lid / GEMM_SG;
  // Every lane of this subgroup where the layout expects it, or NaN sums (see the header).
  let laid_out = subgroupAll(sg_size == GEMM_SG && sg_lane == lane);
  let m0 = wid.y * GEMM_SG_BM + (sg / GEMM_SG_WN) * GEMM_SG_ROWS;
  let n0 = wid.x * GEMM_SG_BN + (sg % GEMM_SG_WN) * GEMM_SG_COLS;
  let k_begin = wid.z * params.k_chunk;
  let k_end = min(K, k_begin + params.k_chunk);
  var tile = sg_tile(m0, n0, lane, M, N, K, k_begin, k_end);
  let padded = (k_end - k_begin) % BK != 0u; // the tiled core adds +0 · +0 steps up to a multiple of BK
  let p = lane / GEMM_SG_PN;
  let q = lane % GEMM_SG_PN;
  for (var i = 0u; i < GEMM_SG_TM; i++) {
    let m = m0 + i * GEMM_SG_PM + p;
    for (var g = 0u; g < GEMM_SG_TN / 4u; g++) {
      let n = n0 + g * 4u * GEMM_SG_PN + q * 4u; // a multiple of 4; columns n .. n + 3 are this lane's
      if (m >= M || n >= N) {
        continue;
      }
      var v = tile[i * 2u + g];
      if (padded) {
        v = select(v, vec4f(), v == vec4f());
      }
      if (!laid_out) {
        v = vec4f(bitcast<f32>(0x7fc00000u | (lane & 0u))); // a NaN (WGSL refuses a constant one)
      }
      if (GEMM_SPLIT) {
        gemm_store_partial(wid.z, m, n, v);
      } else {
        gemm_epilogue(m, n, v);
      }
    }
  }
}
