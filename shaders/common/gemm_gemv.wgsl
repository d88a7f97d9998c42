// The fused GEMM for a few rows (a decode step: M ≤ 4): each weight is read once, coalesced, and every split of
// the K partition is summed inside one workgroup, so a split launch is one dispatch (no workspace, no reduction
// dispatch). What bounds it is each output's serial chain of K / splits accumulate steps (the contract below), not
// only the bandwidth. A workgroup owns GEMV_NC tile columns (GEMV_NC / 4 groups of 4) of every
// row and walks K in steps; per step it stages, for each split s of the launch's partition, the next GEMV_KS k
// of that split — W[columns, k] loaded by all threads along K (8 consecutive k of one row per 8 consecutive
// threads: whole 32-byte sectors), and x[rows, k] — into double-buffered workgroup memory, while the summing
// threads (one per 4-column group and split) add up the previous step. One barrier per step.
// Contract with the kernel file: exactly common/gemm_core.wgsl's (params, GEMM_IN, gemm_w_row, gemm_epilogue).
//
// Numerics: the same bits as the tiled core with its split-K reduction, by construction.
// - Split s's sum of an output is one thread's vec4 lane, started at +0 and advanced by gemm_fma() for k = k_begin,
//   k_begin + 1, … < k_end in order: the tiled core's steps with the same values (x read at k + 2 under
//   FAULT_TILE_OFFSET, 0 at and past K; W of a GEMM_NONE column 0). The tiled core's padding of the split to a
//   multiple of BK adds only +0 · +0, which changes nothing but a −0 sum into +0: applied once with select, as
//   common/gemm_plain.wgsl does.
// - Unsplit (one split), that sum goes to the epilogue as the core hands it. Split, the partial sums are added
//   from +0 in split order through acc() and then handed to the epilogue: common/gemm_reduce.wgsl's arithmetic.
// Grid: (ceil(N / GEMV_NC), 1, 1) workgroups of GEMV_WG threads; GEMV_SPLITS = ceil(K / k_chunk) and
// the shape are set per launch (src/kernels/fused-gemv.ts); M ≤ 4 is a param (one row's sums, or all four).

// The x and W bindings, the tiled core's constants and GEMM_NONE: common/gemm_io.wgsl.

override GEMV_WG: u32 = 128; // threads per workgroup
override GEMV_NC: u32 = 8; // tile columns per workgroup (a multiple of 8)
override GEMV_KS: u32 = 128; // k per split and step (a multiple of 8)
override GEMV_SPLITS: u32 = 1; // splits of the K partition: ceil(K / k_chunk)

override GEMV_NG: u32 = GEMV_NC / 4u; // 4-column groups
override GEMV_SLOTS: u32 = GEMV_SPLITS * GEMV_KS; // staged k per step, split after split
override GEMV_TILE: u32 = GEMV_NC * GEMV_SLOTS; // W elements staged per step
override GEMV_LOADS: u32 = (GEMV_TILE + GEMV_WG - 1u) / GEMV_WG; // W elements each thread stages per step (≤ 16)
override GEMV_ROW: u32 = GEMV_NG + 1u; // a staged k's vec4s: the groups, and one of padding (bank spread)

const GEMM_SPLIT: bool = false;
const GEMV_LOADS_MAX: u32 = 16u;
const GEMV_X_MAX: u32 = 4u; // x slots each thread stages per step: ceil(GEMV_SLOTS / GEMV_WG) ≤ 4

// [buffer][slot][group] vec4s of 4 columns (W), [buffer][slot] vec4s of 4 rows (x). After the last step the W
// array holds the split partials [split][row][group] for the reduction.
var<workgroup> gemv_w: array<vec4f, 2u * GEMV_SLOTS * GEMV_ROW>;
var<workgroup> gemv_x: array<vec4f, 2u * GEMV_SLOTS>;

/** One accumulate step of 4 outputs: s + a·b, each through acc() (as common/gemm_core.wgsl's). */
fn gemm_fma(s: vec4f, a: f32, b: vec4f) -> vec4f {
  let t = s + a * b;
  return vec4f(acc(t.x), acc(t.y), acc(t.z), acc(t.w));
}

/** Staged slot t of step j -> its k, or GEMM_NONE where the slot lies past its split's end. */
fn gemv_k(t: u32, j: u32) -> u32 {
  let s = t / GEMV_KS;
  let begin = s * params.k_chunk;
  let k = begin + j * GEMV_KS + t % GEMV_KS;
  if (k >= min(params.K, begin + params.k_chunk)) {
    return GEMM_NONE;
  }
  return k;
}

/** Staged element e -> (slot, block column): 8 consecutive slots fastest, then the column, then the next 8. */
fn gemv_slot(e: u32) -> u32 {
  return (e / (8u * GEMV_NC)) * 8u + e % 8u;
}

fn gemv_col(e: u32) -> u32 {
  return (e / 8u) % GEMV_NC;
}

alias GemvLoads = array<f32, GEMV_LOADS_MAX>;
alias GemvRows = array<u32, GEMV_LOADS_MAX>;
alias GemvX = array<vec4f, GEMV_X_MAX>;

/** The W values this thread stages for step j (rows: the W row of each element's column, or GEMM_NONE). */
fn gemv_fetch_w(rows: GemvRows, lid: u32, j: u32) -> GemvLoads {
  var r: GemvLoads;
  for (var l = 0u; l < GEMV_LOADS; l++) {
    let e = lid + l * GEMV_WG;
    let k = gemv_k(gemv_slot(e), j);
    if (e < GEMV_TILE && rows[l] != GEMM_NONE && k != GEMM_NONE) {
      r[l] = load_w(rows[l] * params.K + k);
    }
  }
  return r;
}

/** The x values (rows as the vec4's lanes) of the slots lid, lid + GEMV_WG, … of step j: 0 past K or M. */
fn gemv_fetch_x(lid: u32, j: u32) -> GemvX {
  var r: GemvX;
  let shift = select(0u, 2u, FAULT_TILE_OFFSET);
  for (var i = 0u; i < GEMV_X_MAX; i++) {
    let t = lid + i * GEMV_WG;
    if (t < GEMV_SLOTS) {
      let k = gemv_k(t, j);
      if (k != GEMM_NONE && k + shift < params.K) {
        let K = params.K;
        let last = params.M - 1u;
        r[i] = vec4f(
          x[k + shift],
          x[min(1u, last) * K + k + shift],
          x[min(2u, last) * K + k + shift],
          x[min(3u, last) * K + k + shift],
        );
      }
    }
  }
  return r;
}

fn gemv_stage(buf: u32, lid: u32, wr: GemvLoads, xr: GemvX) {
  for (var l = 0u; l < GEMV_LOADS; l++) {
    let e = lid + l * GEMV_WG;
    let c = gemv_col(e);
    if (e < GEMV_TILE) {
      gemv_w[(buf * GEMV_SLOTS + gemv_slot(e)) * GEMV_ROW + c / 4u][c % 4u] = wr[l];
    }
  }
  for (var i = 0u; i < GEMV_X_MAX; i++) {
    let t = lid + i * GEMV_WG;
    if (t < GEMV_SLOTS) {
      gemv_x[buf * GEMV_SLOTS + t] = xr[i];
    }
  }
}

@compute @workgroup_size(GEMV_WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3u) {
  let N = params.N;
  let K = params.K;
  let n0 = wid.x * GEMV_NC;
  // The W rows this thread stages are the same at every step.
  var rows: GemvRows;
  for (var l = 0u; l < GEMV_LOADS; l++) {
    let n = n0 + gemv_col(lid + l * GEMV_WG);
    rows[l] = GEMM_NONE;
    if (n < N) {
      rows[l] = gemm_w_row(n);
    }
  }
  // Summing thread (g, s) = lid: 4-column group g, split s.
  let g = lid % GEMV_NG;
  let s = lid / GEMV_NG;
  let sums = s < GEMV_SPLITS;
  let k_begin = min(K, s * params.k_chunk);
  let len = min(K, k_begin + params.k_chunk) - k_begin; // this split's k (0 for threads that do not sum)
  let steps = (min(K, params.k_chunk) + GEMV_KS - 1u) / GEMV_KS; // the first split is the longest
  var wr = gemv_fetch_w(rows, lid, 0u);
  var xr = gemv_fetch_x(lid, 0u);
  gemv_stage(0u, lid, wr, xr);
  workgroupBarrier();
  var s0 = vec4f();
  var s1 = vec4f();
  var s2 = vec4f();
  var s3 = vec4f();
  for (var j = 0u; j < steps; j++) {
    let cur = j % 2u;
    let more = j + 1u < steps;
    if (more) {
      wr = gemv_fetch_w(rows, lid, j + 1u);
      xr = gemv_fetch_x(lid, j + 1u);
    }
    if (sums) {
      let count = min(GEMV_KS, len - min(len, j * GEMV_KS));
      let t0 = cur * GEMV_SLOTS + s * GEMV_KS;
      // Batches of 8 k: the 16 workgroup loads first, then the 8 dependent steps of each sum (a loop that loads
      // as it adds waits on every load: 3× slower on an H200).
      var kk = 0u;
      while (kk + 8u <= count) {
        let t = t0 + kk;
        let b0 = gemv_w[t * GEMV_ROW + g];
        let b1 = gemv_w[(t + 1u) * GEMV_ROW + g];
        let b2 = gemv_w[(t + 2u) * GEMV_ROW + g];
        let b3 = gemv_w[(t + 3u) * GEMV_ROW + g];
        let b4 = gemv_w[(t + 4u) * GEMV_ROW + g];
        let b5 = gemv_w[(t + 5u) * GEMV_ROW + g];
        let b6 = gemv_w[(t + 6u) * GEMV_ROW + g];
        let b7 = gemv_w[(t + 7u) * GEMV_ROW + g];
        let a0 = gemv_x[t];
        let a1 = gemv_x[t + 1u];
        let a2 = gemv_x[t + 2u];
        let a3 = gemv_x[t + 3u];
        let a4 = gemv_x[t + 4u];
        let a5 = gemv_x[t + 5u];
        let a6 = gemv_x[t + 6u];
        let a7 = gemv_x[t + 7u];
        s0 = gemv_steps(s0, vec4f(a0.x, a1.x, a2.x, a3.x), vec4f(a4.x, a5.x, a6.x, a7.x), b0, b1, b2, b3, b4, b5, b6, b7);
        if (params.M > 1u) {
          // Rows past M repeat the last row (gemv_fetch_x) and are not handed on.
          s1 = gemv_steps(s1, vec4f(a0.y, a1.y, a2.y, a3.y), vec4f(a4.y, a5.y, a6.y, a7.y), b0, b1, b2, b3, b4, b5, b6, b7);
          s2 = gemv_steps(s2, vec4f(a0.z, a1.z, a2.z, a3.z), vec4f(a4.z, a5.z, a6.z, a7.z), b0, b1, b2, b3, b4, b5, b6, b7);
          s3 = gemv_steps(s3, vec4f(a0.w, a1.w, a2.w, a3.w), vec4f(a4.w, a5.w, a6.w, a7.w), b0, b1, b2, b3, b4, b5, b6, b7);
        }
        kk += 8u;
      }
      while (kk < count) {
        let b = gemv_w[(t0 + kk) * GEMV_ROW + g];
        let a = gemv_x[t0 + kk];
        s0 = gemm_fma(s0, a.x, b);
        s1 = gemm_fma(s1, a.y, b);
        s2 = gemm_fma(s2, a.z, b);
        s3 = gemm_fma(s3, a.w, b);
        kk += 1u;
      }
    }
    if (more) {
      gemv_stage(1u - cur, lid, wr, xr);
    }
    workgroupBarrier();
  }
  if (len % BK != 0u) {
    s0 = select(s0, vec4f(), s0 == vec4f());
    s1 = select(s1, vec4f(), s1 == vec4f());
    s2 = select(s2, vec4f(), s2 == vec4f());
    s3 = select(s3, vec4f(), s3 == vec4f());
  }
  let n = n0 + g * 4u;
  if (GEMV_SPLITS == 1u) {
    if (sums && n < N) {
      gemv_out(n, s0, s1, s2, s3);
    }
    return;
  }
  // Split partials [s][row][g] into the (no longer read) W tiles, then thread g adds them in split order.
  if (sums) {
    let o = s * 4u * GEMV_NG + g;
    gemv_w[o] = s0;
    gemv_w[o + GEMV_NG] = s1;
    gemv_w[o + 2u * GEMV_NG] = s2;
    gemv_w[o + 3u * GEMV_NG] = s3;
  }
  workgroupBarrier();
  if (lid < GEMV_NG && n < N) {
    var v0 = vec4f(0.0);
    var v1 = vec4f(0.0);
    var v2 = vec4f(0.0);
    var v3 = vec4f(0.0);
    for (var p = 0u; p < GEMV_SPLITS; p++) {
      let o = p * 4u * GEMV_NG + g;
      v0 = gemv_add(v0, gemv_w[o]);
      v1 = gemv_add(v1, gemv_w[o + GEMV_NG]);
      v2 = gemv_add(v2, gemv_w[o + 2u * GEMV_NG]);
      v3 = gemv_add(v3, gemv_w[o + 3u * GEMV_NG]);
    }
    gemv_out(n, v0, v1, v2, v3);
  }
}

/** Eight accumulate steps of one row's 4 sums, in k order: x values lo (k 0..3), hi (k 4..7), W columns b0..b7. */
fn gemv_steps(
  s: vec4f,
  lo: vec4f,
  hi: vec4f,
  b0: vec4f,
  b1: vec4f,
  b2: vec4f,
  b3: vec4f,
  b4: vec4f,
  b5: vec4f,
  b6: vec4f,
  b7: vec4f,
) -> vec4f {
  var v = gemm_fma(s, lo.x, b0);
  v = gemm_fma(v, lo.y, b1);
  v = gemm_fma(v, lo.z, b2);
  v = gemm_fma(v, lo.w, b3);
  v = gemm_fma(v, hi.x, b4);
  v = gemm_fma(v, hi.y, b5);
  v = gemm_fma(v, hi.z, b6);
  return gemm_fma(v, hi.w, b7);
}

/** One step of the split reduction: v + p, each lane through acc() (common/gemm_reduce.wgsl's). */
fn gemv_add(v: vec4f, p: vec4f) -> vec4f {
  let t = v + p;
  return vec4f(acc(t.x), acc(t.y), acc(t.z), acc(t.w));
}

/** Hands rows 0 .. M − 1 of columns n .. n + 3 to the epilogue. */
fn gemv_out(n: u32, v0: vec4f, v1: vec4f, v2: vec4f, v3: vec4f) {
  gemm_epilogue(0u, n, v0);
  if (params.M > 1u) {
    gemm_epilogue(1u, n, v1);
  }
  if (params.M > 2u) {
    gemm_epilogue(2u, n, v2);
  }
  if (params.M > 3u) {
    gemm_epilogue(3u, n, v3);
  }
}
