// Flash attention: causal scaled dot-product attention in one pass, no T×T matrix in global memory.
//   ctx[i, h*hd + e] = Σ_{j<=i} softmax_j(q[h,i]·k[h,j] · scale) · v[h, j, e]
// q, k, v: [H, T, hd] (rotary applied), ctx: [T, H*hd] (heads merged, like reference/attn_values).
//
// One workgroup per (query tile of BQ rows, head): workgroup x = query tile, y = head. Threads (c, r) with
// c < BK (workgroup_size x) and r < BQ (y). The query tile is staged once; then for each key tile of BK keys
// up to the diagonal (tiles wholly above it are never visited):
//   1. the K tile is staged in `kv`;                                      barrier (FAULT_NO_BARRIER drops it)
//   2. thread (c, r) computes the score s[r, c] of row i = q0 + r and key j = j0 + c into `ss`;      barrier
//   3. every thread of row r reads the row's BK scores and makes the same online-softmax update:
//      m_new = max(m, tile max); when the max grows, l and the accumulators are rescaled by exp(m − m_new);
//      thread (c, r) writes p[r, c] = exp(s − m_new) (0 where masked: j > i or j >= T) into `ps`, and the
//      V tile replaces the K tile in `kv` (every score is already in `ss`);                         barrier
//   4. thread (c, r) adds Σ_c' p[r, c'] to l and Σ_c' p[r, c'] v[j0 + c', e] to its accumulators, which
//      hold output columns e = c + n·BK (n < ACC_N);                                                barrier
// At the end ctx[i, h*hd + e] = st(o / l). m and l live in registers, replicated across the BK threads of
// a row (they all compute the same values from the same shared data).
//
// Limits: hd <= MAX_HD (128) for the staged rows and hd <= ACC_N·BK for the accumulators (128 with BK = 8).
// Workgroup storage: 4·((BQ + BK)·MAX_HD + 2·BQ·BK) bytes = 13 KiB with BQ = 16, BK = 8 (default limit
// 16 KiB); BQ·BK = 128 invocations (limit 256). The launcher checks both for other tile sizes.
//
// Precision (common/precision.wgsl): acc() after every accumulate step (the q·k dot, l, the output
// accumulators, the rescales), st() on what is written to ctx.

struct Params { T: u32, hd: u32, H: u32, scale: f32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;         // [H, T, hd]
@group(0) @binding(2) var<storage, read> k: array<f32>;         // [H, T, hd]
@group(0) @binding(3) var<storage, read> v: array<f32>;         // [H, T, hd]
@group(0) @binding(4) var<storage, read_write> ctx: array<f32>; // [T, H*hd]

override BQ: u32 = 16u; // query rows per workgroup (workgroup_size y)
override BK: u32 = 8u;  // keys per tile (workgroup_size x)
// Fault switches (for the divergence explorer's demos; both off in normal runs).
override FAULT_NO_RESCALE: bool = false; // skip rescaling l and the accumulators when the max grows
override FAULT_NO_BARRIER: bool = false; // drop the barrier between staging a K tile and reading it

override MAX_HD: u32 = 128u; // widest staged row: the launcher sets head_dim (<= 128)
const ACC_N: u32 = 16u;   // accumulators per thread: hd <= ACC_N * BK
const NEG: f32 = -1.0e30; // running max before any key (finite: exp(NEG - m) is never evaluated)

var<workgroup> qs: array<f32, BQ * MAX_HD>; // [BQ, hd] query tile (row pitch hd)
var<workgroup> kv: array<f32, BK * MAX_HD>; // [BK, hd] K tile, then V tile (row pitch hd)
var<workgroup> ss: array<f32, BQ * BK>;     // [BQ, BK] scaled scores of the current tile
var<workgroup> ps: array<f32, BQ * BK>;     // [BQ, BK] exp(s - m_new), 0 where masked

@compute @workgroup_size(BK, BQ)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let T = params.T;
  let hd = params.hd;
  let H = params.H;
  let h = wid.y;
  if (h >= H) { return; } // uniform per workgroup
  let c = lid.x; // key column in the tile; output columns c + n*BK
  let r = lid.y; // query row in the tile
  let tid = r * BK + c;
  let nthreads = BQ * BK;
  let q0 = wid.x * BQ;
  let i = q0 + r;        // this thread's query row
  let base = h * T * hd; // head h in q, k, v

  // Query tile; rows past T are zeros (their results are never written).
  for (var x = tid; x < BQ * hd; x += nthreads) {
    let row = q0 + x / hd;
    var val = 0.0;
    if (row < T) { val = q[base + row * hd + x % hd]; }
    qs[x] = val;
  }
  workgroupBarrier();

  var m = NEG;              // running max of row i's scores
  var l = 0.0;              // running Σ exp(s - m)
  var o: array<f32, ACC_N>; // o[n] = running Σ exp(s - m) · v[j, c + n*BK] (zero-initialised)

  let kEnd = min(T, q0 + BQ); // causal: the tile's last row sees keys < kEnd; later tiles are skipped
  for (var j0 = 0u; j0 < kEnd; j0 += BK) {
    // 1. K tile; keys past T are zeros.
    for (var x = tid; x < BK * hd; x += nthreads) {
      let j = j0 + x / hd;
      var val = 0.0;
      if (j < T) { val = k[base + j * hd + x % hd]; }
      kv[x] = val;
    }
    if (!FAULT_NO_BARRIER) { workgroupBarrier(); } // an override condition: uniform

    // 2. Score of (i, j); masked above the diagonal (and past T).
    let j = j0 + c;
    let valid = j <= i && j < T;
    var s = 0.0;
    if (valid) {
      var dot = 0.0;
      for (var e = 0u; e < hd; e++) { dot = acc(dot + qs[r * hd + e] * kv[c * hd + e]); }
      s = dot * params.scale;
    }
    ss[r * BK + c] = s;
    workgroupBarrier();

    // 3. Online softmax update of row i.
    var mTile = NEG;
    for (var cc = 0u; cc < BK; cc++) {
      let jj = j0 + cc;
      if (jj <= i && jj < T) { mTile = max(mTile, ss[r * BK + cc]); }
    }
    let mNew = max(m, mTile);
    // l > 0 once the row has seen a key (key 0 is in the first tile of every row): nothing to rescale before.
    if (!FAULT_NO_RESCALE && mNew > m && l > 0.0) {
      let alpha = exp(m - mNew);
      l = acc(l * alpha);
      for (var n = 0u; n < ACC_N; n++) { o[n] = acc(o[n] * alpha); }
    }
    m = mNew;
    var p = 0.0;
    if (valid) { p = exp(s - mNew); }
    ps[r * BK + c] = p;
    // V tile into kv: every read of the K tile happened before the barrier above.
    for (var x = tid; x < BK * hd; x += nthreads) {
      let jv = j0 + x / hd;
      var val = 0.0;
      if (jv < T) { val = v[base + jv * hd + x % hd]; }
      kv[x] = val;
    }
    workgroupBarrier();

    // 4. Accumulate the tile.
    for (var cc = 0u; cc < BK; cc++) { l = acc(l + ps[r * BK + cc]); }
    for (var n = 0u; n < ACC_N; n++) {
      let e = c + n * BK;
      if (e < hd) {
        var a = o[n];
        for (var cc = 0u; cc < BK; cc++) { a = acc(a + ps[r * BK + cc] * kv[cc * hd + e]); }
        o[n] = a;
      }
    }
    workgroupBarrier(); // before the next tile overwrites kv, ss and ps
  }

  if (i < T) {
    for (var n = 0u; n < ACC_N; n++) {
      let e = c + n * BK;
      if (e < hd) { ctx[i * H * hd + h * hd + e] = st(o[n] / l); }
    }
  }
}
