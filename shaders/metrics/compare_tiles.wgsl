// Comparison metrics, pass 1: one workgroup per tile (at most a few thousand elements of one job, never across a
// row), summarising `a` (f32, under test) against `b` (the baseline: f32, or a
// double-float pair hi + lo read as the f64 value hi + lo) into one record (part.wgsl). Pass 2
// (reduce.wgsl) folds the tiles' records into rows and jobs. Conventions: src/compare/metrics.ts.
// A dispatch binds several operand buffers (slots_*.wgsl: opnd(slot, word)); each stretch names the slots of its
// a and b.

@group(0) @binding(0) var<storage, read> tiles: array<u32>;      // [stretches][TILE_WORDS], see below
@group(0) @binding(1) var<storage, read> edges: array<u32>;      // [HIST_BINS − 1][4]: Diff (e, h, l), 0; bins
@group(0) @binding(2) var<storage, read_write> rec: array<u32>;  // records (part.wgsl)

// Stretch (consecutive tiles of one job, row and segment): 0 a word offset, 1 b word offset (in their slots'
// bindings), 2 elements, 3 flags (bit 0 df baseline, bits 1–2 storage precision 0 fp32 / 1 fp16 / 2 bf16, bit 3
// histogram, bits 16–23 a's slot, 24–31 b's slot), 4 record word offset
// of its first tile, 5 histogram word offset of its first tile, 6 its first tile's index in the dispatch (ascending),
// 7 elements per tile. Workgroup w runs tile w − word 6 of the last stretch whose word 6 is at most w.
const TILE_WORDS: u32 = 8u;

// The edges (and the bins by exponent, below), copied to workgroup memory once per tile.
var<workgroup> wedges: array<vec4<u32>, HIST_BINS - 1u>;

fn edge(k: u32) -> Diff {
  let w = wedges[k];
  return Diff(bitcast<i32>(w.x), bitcast<f32>(w.y), bitcast<f32>(w.z));
}

// Bins by exponent (edges word 4 (HIST_BINS − 1) + j, j = k − BIN_K0 clamped to [0, BIN_KS)): the number of edges
// whose exponent is below k, plus 256 when an edge has exponent k. Consecutive edges are 10^0.4 > 2 apart, so a
// binade holds at most one: an error of exponent k is in that bin, or the next when it reaches that edge.
const BIN_K0: i32 = -48;
const BIN_KS: u32 = 72u;
var<workgroup> wbins: array<u32, BIN_KS>;

/** Histogram bin of a nonzero |a − b| (canonical Diff): the number of bin edges it reaches (edges[k] is the least
 * f64 error the CPU histogram puts in bin k + 1, as a double-float). */
fn bin_of(d: Diff) -> u32 {
  let w = wbins[u32(clamp(d.e - BIN_K0, 0, i32(BIN_KS) - 1))];
  let b = w & 0xffu;
  if (w < 256u) { return b; }
  return b + select(0u, 1u, diff_ge(d, edge(b)));
}

/** bin_of for an exact difference r of f32 scale: its Diff made only where an edge shares its exponent. */
fn bin_of_r(r: vec2<f32>) -> u32 {
  let w = wbins[u32(clamp(expo(r.x) - BIN_K0, 0, i32(BIN_KS) - 1))];
  let b = w & 0xffu;
  if (w < 256u) { return b; }
  return b + select(0u, 1u, diff_ge(diff_of(r), edge(b)));
}

// HIST_COPIES interleaved copies of the histogram (thread lid counts into copy lid % HIST_COPIES): errors
// crowd into a few bins, and one copy would serialise the workgroup's atomics on them.
const HIST_COPIES: u32 = 8u;
var<workgroup> hist: array<atomic<u32>, HIST_BINS * HIST_COPIES>;

// Elements take one of two paths (a choice per element, so results never depend on which):
//  - the common one, where a, the baseline's hi and lo are zero or of exponent −103 … 100 (f32 biased 24 … 227):
//    the difference r = a − (hi + lo) is formed exactly in f32 (TwoSums: nothing under- or overflows there), the
//    baseline's f32 rounding is one f32 addition hi + lo (equal to rounding the f64 hi + lo, see below), and the
//    canonical Diff is made only where it matters (a new largest difference, an error near a bin edge);
//  - any other (subnormal, tiny or huge operands): decoded from the bits into extended values as before.
// Both feed the same scaled sums (Sc, ext.wgsl). The tiny-lo case of the f64 rounding (lo_as_f64) is rounded
// in place on the common path.
const WIN_LO: u32 = 24u;    // biased exponents of the common path: 24 … 227
const WIN_SPAN: u32 = 204u;

/** Zero, or a finite f32 of exponent −103 … 100. */
fn in_window(b: u32) -> bool {
  return ((b >> 23u) & 0xffu) - WIN_LO < WIN_SPAN || (b & 0x7fffffffu) == 0u;
}

/** A thread's summary in the workgroup's tree: its largest difference and its scaled sums. */
struct TPart { key: Diff, ops: vec3<u32>, sd: Sc, sn: Sc }
var<workgroup> tparts: array<TPart, WG>;

/** a + b for scaled sums: both at the larger scale (`p1` as in sc_fit). */
fn sc_merge(a: Sc, b: Sc, p1: i32) -> Sc {
  if (b.s1.x == 0.0 && b.s2.x == 0.0) { return a; }
  if (a.s1.x == 0.0 && a.s2.x == 0.0) { return b; }
  let e = max(a.e, b.e);
  let s1 = dd_add_pos(sh2(a.s1, p1 * (a.e - e)), sh2(b.s1, p1 * (b.e - e)));
  let s2 = dd_add_pos(sh2(a.s2, 2 * (a.e - e)), sh2(b.s2, 2 * (b.e - e)));
  return Sc(e, pow2(-e), s1, s2);
}

fn tpart_merge(p: TPart, q: TPart) -> TPart {
  var r = p;
  if (q.key.e != ZE && (r.key.e == ZE || !diff_ge(r.key, q.key))) {
    r.key = q.key;
    r.ops = q.ops;
  }
  r.sd = sc_merge(r.sd, q.sd, 1);
  r.sn = sc_merge(r.sn, q.sn, 2);
  return r;
}

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
  let sa = (flags >> 16u) & 0xffu;
  let sb = flags >> 24u;
  let hdst = select(NO_HIST, tiles[t + 5u] + k * HIST_BINS, want_hist);

  if (want_hist) {
    for (var k = lid; k < HIST_BINS - 1u; k += WG) {
      wedges[k] = vec4<u32>(edges[4u * k], edges[4u * k + 1u], edges[4u * k + 2u], 0u);
    }
    for (var k = lid; k < BIN_KS; k += WG) { wbins[k] = edges[4u * (HIST_BINS - 1u) + k]; }
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
  var key = Diff(ZE, 0.0, 0.0);
  var ops = vec3<u32>(0u);
  var kmag = 0.0; // key's hi as an f32 (2^110 past the common path's range): a smaller |r.x| cannot beat it
  var sd = sc_zero(); // Σ|a − b|, Σ(a − b)²
  var sn = sc_zero(); // Σa², Σb²
  for (var i = lid; i < count; i += WG) {
    seen += 1u;
    let xb = opnd(sa, a0 + i);
    var hb: u32;
    var lb = 0u;
    var cy: u32;
    if (is_df) {
      hb = opnd(sb, b0 + 2u * i);
      lb = opnd(sb, b0 + 2u * i + 1u);
      cy = fclass_sum(fclass(hb), fclass(lb));
    } else {
      hb = opnd(sb, b0 + i);
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
    let hz = (hb & 0x7fffffffu) == 0u;
    let usual = in_window(xb) && in_window(hb) && (!is_df || (in_window(lb) && (!hz || (lb & 0x7fffffffu) == 0u)));
    if (usual) {
      let x = bitcast<f32>(xb);
      let hv = bitcast<f32>(hb);
      var lv = bitcast<f32>(lb);
      let eh = expo(hv);
      // The f64 sum hi + lo keeps lo unless lo has bits below 2^-52 of hi's binade (its exponent below eh − 29):
      // then lo is rounded as lo_as_f64 does. Past that, hi + lo in f32 is the f32 rounding of the f64 value: a
      // lo that needs no f64 rounding is rounded once by the f32 addition, and a smaller one is below a quarter
      // ulp of hi, where the f32 rounding is hi either way.
      if (lb != 0u && expo(lv) < eh - 29) {
        var q = 52;
        if ((hb & 0x7fffffu) == 0u && (lv < 0.0) != (hv < 0.0)) { q = 53; }
        lv = ldexp(round(ldexp(lv, q - eh)), eh - q);
      }
      let yb = select(hb, bitcast<u32>(hv + lv), lb != 0u);
      max_ulp = max(max_ulp, ulp_dist(xb, yb, prec));
      // r = x − hi − lo exactly (as diff_abs at E = 0; for an f32 baseline the first TwoSum alone).
      var r = two_sum(x, -hv);
      if (is_df) {
        let s2 = two_sum(r.x, -lv);
        r = two_sum(s2.x, r.y + s2.y);
      }
      if (r.x == 0.0) {
        zeros += 1u;
      } else {
        let ar = abs(r.x);
        if (ar >= kmag) {
          let d = diff_of(r);
          if (key.e == ZE || !diff_ge(key, d)) {
            key = d;
            ops = vec3<u32>(xb, hb, lb);
            kmag = ar;
          }
        }
        if (want_hist) {
          atomicAdd(&hist[bin_of_r(r) * HIST_COPIES + lid % HIST_COPIES], 1u);
        }
        sd = sc_fit(sd, expo(r.x), 1);
        let sg = select(sd.f, -sd.f, r.x < 0.0);
        let ds = vec2<f32>(ar * sd.f, r.y * sg);
        sd.s1 = dd_add_pos(sd.s1, ds);
        sd.s2 = dd_add_pos(sd.s2, sq_df(ds.x, ds.y));
      }
      sn = sc_fit(sn, max(expo(x), eh), 2);
      sn.s1 = dd_add_pos(sn.s1, sq_exact(abs(x) * sn.f));
      let hs = hv * sn.f;
      sn.s2 = dd_add_pos(sn.s2, sq_df(abs(hs), select(lv, -lv, hv < 0.0) * sn.f));
      continue;
    }
    // Any other element: decoded into extended values (ext.wgsl).
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
      if (key.e == ZE || !diff_ge(key, d)) {
        key = d;
        ops = vec3<u32>(xb, hb, lb);
        kmag = select(ldexp(d.h, d.e), pow2(110), d.e > 102);
      }
      if (want_hist) { atomicAdd(&hist[bin_of(d) * HIST_COPIES + lid % HIST_COPIES], 1u); }
      sd = sc_fit(sd, d.e, 1);
      let ds = sh2(vec2<f32>(d.h, d.l), d.e - sd.e);
      sd.s1 = dd_add_pos(sd.s1, ds);
      sd.s2 = dd_add_pos(sd.s2, sq_df(ds.x, ds.y));
    }
    sn = sc_fit(sn, max(x.e, h.e), 2);
    if (x.m != 0.0) { sn.s1 = dd_add_pos(sn.s1, sq_exact(sh(abs(x.m), x.e - sn.e))); }
    if (h.m != 0.0) {
      let sg = select(1.0, -1.0, h.m < 0.0);
      sn.s2 = dd_add_pos(sn.s2, sq_df(sh(abs(h.m), h.e - sn.e), sg * sh(ls, h.e - sn.e)));
    }
  }
  atomicAdd(&counts[0], seen);
  atomicAdd(&counts[1], nan);
  atomicAdd(&counts[2], inf);
  atomicAdd(&counts[3], bnf);
  atomicAdd(&counts[4], mism);
  atomicAdd(&counts[5], fin);
  atomicAdd(&counts[6], zeros);
  atomicMax(&counts[7], max_ulp);
  // The workgroup's tree over the threads' scaled sums (their scales aligned pairwise: cheaper than merging
  // extended accumulators), then one record in part.wgsl's layout.
  tparts[lid] = TPart(key, ops, sd, sn);
  workgroupBarrier();
  for (var st = WG / 2u; st > 0u; st = st / 2u) {
    if (lid < st) { tparts[lid] = tpart_merge(tparts[lid], tparts[lid + st]); }
    workgroupBarrier();
  } // (the counters and histogram are complete after these barriers)
  if (lid < 8u) { rec[dst + lid] = atomicLoad(&counts[lid]); }
  if (lid == 0u) {
    let q = tparts[0];
    var total = part_zero();
    total.key = q.key;
    total.ops = q.ops;
    total.sum_abs = acc_of(q.sd.s1, q.sd.e);
    total.ssq_e = acc_of(q.sd.s2, 2 * q.sd.e);
    total.ssq_a = acc_of(q.sn.s1, 2 * q.sn.e);
    total.ssq_b = acc_of(q.sn.s2, 2 * q.sn.e);
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
