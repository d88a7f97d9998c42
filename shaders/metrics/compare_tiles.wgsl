// Comparison metrics, pass 1: one workgroup per tile (at most a few thousand elements of one job, never across a
// row), summarising `a` (f32, under test) against `b` (the baseline: f32, or a
// double-float pair hi + lo read as the f64 value hi + lo) into one record (part.wgsl). Pass 2
// (reduce.wgsl) folds the tiles' records into rows and jobs. Conventions: src/compare/metrics.ts.

@group(0) @binding(0) var<storage, read> a: array<u32>;          // f32 bits [*] (the group's range)
@group(0) @binding(1) var<storage, read> b: array<u32>;          // f32 bits [*], or df [*][2] (hi, lo)
@group(0) @binding(2) var<storage, read> tiles: array<u32>;      // [stretches][TILE_WORDS], see below
@group(0) @binding(3) var<storage, read> edges: array<u32>;      // [HIST_BINS − 1][4]: Diff (e, h, l), 0
@group(0) @binding(4) var<storage, read_write> rec: array<u32>;  // records (part.wgsl)

// Stretch (consecutive tiles of one job, row and segment): 0 a word offset, 1 b word offset, 2 elements, 3 flags
// (bit 0 df baseline, bits 1–2 storage precision 0 fp32 / 1 fp16 / 2 bf16, bit 3 histogram), 4 record word offset
// of its first tile, 5 histogram word offset of its first tile, 6 its first tile's index in the dispatch (ascending),
// 7 elements per tile. Workgroup w runs tile w − word 6 of the last stretch whose word 6 is at most w.
const TILE_WORDS: u32 = 8u;

// The edges, copied to workgroup memory once per tile.
var<workgroup> wedges: array<vec4<u32>, HIST_BINS - 1u>;

fn edge(k: u32) -> Diff {
  let w = wedges[k];
  return Diff(bitcast<i32>(w.x), bitcast<f32>(w.y), bitcast<f32>(w.z));
}

/** Histogram bin of a nonzero |a − b|: the number of lower bin edges it reaches (edges[k] is the least f64
 * error the CPU histogram puts in bin k + 1, as a double-float). */
fn bin_of(d: Diff) -> u32 {
  var lo = 0u;
  var hi = HIST_BINS - 1u;
  while (lo < hi) {
    let mid = (lo + hi) / 2u;
    if (diff_ge(d, edge(mid))) { lo = mid + 1u; } else { hi = mid; }
  }
  return lo;
}

// HIST_COPIES interleaved copies of the histogram (thread lid counts into copy lid % HIST_COPIES): errors
// crowd into a few bins, and one copy would serialise the workgroup's atomics on them.
const HIST_COPIES: u32 = 8u;
var<workgroup> hist: array<atomic<u32>, HIST_BINS * HIST_COPIES>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let lid = lid3.x;
  var s_lo = 0u;
  var s_hi = arrayLength(&tiles) / TILE_WORDS - 1u;
  while (s_lo < s_hi) {
    let mid = (s_lo + s_hi + 1u) / 2u;
    if (tiles[mid * TILE_WORDS + 6u] <= wid.x) { s_lo = mid; } else { s_hi = mid - 1u; }
  }
  let t = s_lo * TILE_WORDS;
  let k = wid.x - tiles[t + 6u];
  let per = tiles[t + 7u];
  let start = k * per;
  let count = min(per, tiles[t + 2u] - start);
  let flags = tiles[t + 3u];
  let is_df = (flags & 1u) != 0u;
  let a0 = tiles[t] + start;
  let b0 = tiles[t + 1u] + select(start, 2u * start, is_df);
  let dst = tiles[t + 4u] + k * REC;
  let prec = (flags >> 1u) & 3u;
  let want_hist = (flags & 8u) != 0u;
  let hdst = select(NO_HIST, tiles[t + 5u] + k * HIST_BINS, want_hist);

  for (var k = lid; k < HIST_BINS - 1u; k += WG) {
    wedges[k] = vec4<u32>(edges[4u * k], edges[4u * k + 1u], edges[4u * k + 2u], 0u);
  }
  workgroupBarrier();

  var seen = 0u;
  var nan = 0u;
  var inf = 0u;
  var bnf = 0u;
  var mism = 0u;
  var fin = 0u;
  var zeros = 0u;
  var max_ulp = 0u;
  var p = part_zero();
  for (var i = lid; i < count; i += WG) {
    seen += 1u;
    let xb = a[a0 + i];
    var hb: u32;
    var lb = 0u;
    var cy: u32;
    if (is_df) {
      hb = b[b0 + 2u * i];
      lb = b[b0 + 2u * i + 1u];
      cy = fclass_sum(fclass(hb), fclass(lb));
    } else {
      hb = b[b0 + i];
      cy = fclass(hb);
    }
    let cx = fclass(xb);
    if (cx == 3u) { nan += 1u; } else if (cx != 0u) { inf += 1u; }
    if (cy != 0u) { bnf += 1u; }
    if (cx != 0u || cy != 0u) {
      // NaN agrees with NaN and an infinity with itself; anything else is a mismatch.
      if (cx != cy) { mism += 1u; }
      continue;
    }
    fin += 1u;
    let x = decode(xb);
    var h = decode(hb);
    var ls = 0.0;
    var yb = hb;
    if (is_df) {
      var l = decode(lb);
      if (h.m == 0.0) { // (0, lo): the value is lo
        h = l;
        l = Dec(0.0, ZE);
        hb = lb;
        lb = 0u;
      }
      ls = lo_as_f64(h, l);
      yb = round_f32_bits(h, ls, hb, lb);
    }
    max_ulp = max(max_ulp, ulp_dist(xb, yb, prec));
    let d = diff_abs(x, h, ls);
    if (d.e == ZE) {
      zeros += 1u;
    } else {
      if (p.key.e == ZE || !diff_ge(p.key, d)) {
        p.key = d;
        p.ops = vec3<u32>(xb, hb, lb);
      }
      p.sum_abs = acc_add_pos(p.sum_abs, vec2<f32>(d.h, d.l), d.e);
      p.ssq_e = acc_add_pos(p.ssq_e, sq_df(d.h, d.l), 2 * d.e);
      if (want_hist) { atomicAdd(&hist[bin_of(d) * HIST_COPIES + lid % HIST_COPIES], 1u); }
    }
    if (x.m != 0.0) { p.ssq_a = acc_add_pos(p.ssq_a, sq_exact(x.m), 2 * x.e); }
    if (h.m != 0.0) { p.ssq_b = acc_add_pos(p.ssq_b, sq_df(h.m, ls), 2 * h.e); }
  }
  atomicAdd(&counts[0], seen);
  atomicAdd(&counts[1], nan);
  atomicAdd(&counts[2], inf);
  atomicAdd(&counts[3], bnf);
  atomicAdd(&counts[4], mism);
  atomicAdd(&counts[5], fin);
  atomicAdd(&counts[6], zeros);
  atomicMax(&counts[7], max_ulp);
  let total = reduce_parts(lid, p); // (has barriers: the counters and histogram are complete after it)
  if (lid < 8u) { rec[dst + lid] = atomicLoad(&counts[lid]); }
  if (lid == 0u) {
    part_store(dst, total);
    rec[dst + 26u] = select(NO_HIST, hdst, want_hist);
    rec[dst + 27u] = 0u;
  }
  if (want_hist) {
    for (var k = lid; k < HIST_BINS; k += WG) {
      var c = 0u;
      for (var j = 0u; j < HIST_COPIES; j++) { c += atomicLoad(&hist[k * HIST_COPIES + j]); }
      rec[hdst + k] = c;
    }
  }
}
