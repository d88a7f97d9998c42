// Number formats of the GPU comparison metrics (shaders/metrics/*), written so that no result depends on an
// adapter keeping f32 subnormals (some flush them) or on it honouring NaN/Inf arithmetic (WGSL lets a
// compiler assume there is none):
//  - every input value is classified and decoded from its bits (never through float arithmetic), as
//    m · 2^e with |m| in [1, 2) and an i32 exponent e (subnormals included; zero has m = 0, e = ZE);
//  - a difference, a square or a running sum is an "extended" double-float: value = (v.x + v.y) · 2^e, with
//    v a double-float pair (two_sum arithmetic) and e an i32, so f32's exponent range never limits it
//    (squares of f32 span 2^-298 … 2^256);
//  - aligned values are cut to 0 below 2^CUT of the leading operand, so every float that arithmetic sees or
//    makes is normal: the error-free transforms stay exact, and what is cut is below 2^-100 relative.
// Two-sum and the exact square use additions and exact products only, so a contracting compiler (fma) cannot
// change them; what they round passes through opq() so that a compiler cannot simplify them algebraically, and
// their operands are values read from memory, never literal constants (which a backend may fold).

const ZE: i32 = -100000; // exponent of zero
const CUT: i32 = -100;

// A NaN bit pattern no arithmetic produces (as DF_NEVER in shaders/oracle/df.wgsl).
const NEVER: u32 = 0x7fa5a5a5u;

// x, opaque to the compiler: x for every key but the NaN pattern NEVER. NVIDIA's Vulkan compiler simplifies
// (a + b) − a to b on run-time values (see "ALGEBRA ON RUN-TIME VALUES" in shaders/oracle/df.wgsl), which
// drops TwoSum's error term; what the transforms round goes through this, so no algebra relates s to a + b.
fn opq(x: f32, key: f32) -> f32 {
  return select(x, key, bitcast<u32>(key) == NEVER);
}

// s + e == a + b exactly (Knuth TwoSum).
fn two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = opq(a + b, a);
  let bb = opq(s - a, b);
  let e = (a - (s - bb)) + (b - bb);
  return vec2<f32>(s, e);
}

// Accurate double-float addition (as df_add in shaders/oracle/df.wgsl).
fn xdf_add(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let s = two_sum(a.x, b.x);
  let t = two_sum(a.y, b.y);
  var r = two_sum(s.x, s.y + t.x);
  r = two_sum(r.x, r.y + t.y);
  return r;
}

/** Unbiased exponent of a normal f32 (its bits). */
fn expo(v: f32) -> i32 {
  return i32((bitcast<u32>(v) >> 23u) & 0xffu) - 127;
}

/** v · 2^k (k small enough that the result is at most 2^127); 0 when v is 0 or the result is below 2^CUT. */
fn sh(v: f32, k: i32) -> f32 {
  if (v == 0.0 || expo(v) + k < CUT) { return 0.0; }
  return ldexp(v, k);
}

fn sh2(v: vec2<f32>, k: i32) -> vec2<f32> {
  return vec2<f32>(sh(v.x, k), sh(v.y, k));
}

// ---- decoding ----------------------------------------------------------------------------------------------

/** value = m · 2^e, |m| in [1, 2) with the value's sign; zero: m = 0, e = ZE. */
struct Dec { m: f32, e: i32 }

fn decode(b: u32) -> Dec {
  let sign = b & 0x80000000u;
  let ex = (b >> 23u) & 0xffu;
  if (ex != 0u) {
    return Dec(bitcast<f32>(sign | 0x3f800000u | (b & 0x7fffffu)), i32(ex) - 127);
  }
  let mant = b & 0x7fffffu;
  if (mant == 0u) { return Dec(0.0, ZE); }
  // Subnormal: mant · 2^-149, mant < 2^23 converts to f32 exactly (a normal number).
  let fb = bitcast<u32>(f32(mant));
  return Dec(bitcast<f32>(sign | 0x3f800000u | (fb & 0x7fffffu)), i32((fb >> 23u) & 0xffu) - 127 - 149);
}

/** 0 finite, 1 +Inf, 2 −Inf, 3 NaN — from the bits. */
fn fclass(b: u32) -> u32 {
  if ((b & 0x7f800000u) != 0x7f800000u) { return 0u; }
  if ((b & 0x7fffffu) != 0u) { return 3u; }
  return select(1u, 2u, (b & 0x80000000u) != 0u);
}

/** Class of hi + lo under IEEE rules (what the f64 sum of a double-float gives). */
fn fclass_sum(ch: u32, cl: u32) -> u32 {
  if (ch == 3u || cl == 3u) { return 3u; }
  if (ch == 0u) { return cl; }
  if (cl == 0u || cl == ch) { return ch; }
  return 3u; // +Inf + −Inf
}

// ---- exact squares -----------------------------------------------------------------------------------------

/** m² as a double-float for a normal m: m split by its bits into 12 + 12 significant bits, each partial
 * product exact. */
fn sq_exact(m: f32) -> vec2<f32> {
  let mh = bitcast<f32>(bitcast<u32>(m) & 0xfffff000u);
  let ml = m - mh;
  let p = two_sum(mh * mh, 2.0 * mh * ml);
  return two_sum(p.x, p.y + ml * ml);
}

/** (h + l)² for |l| ≤ ulp(h) (l² dropped: below 2^-46 relative). */
fn sq_df(h: f32, l: f32) -> vec2<f32> {
  let s = sq_exact(h);
  let t = two_sum(s.x, s.y + 2.0 * h * l);
  return t;
}

// ---- extended accumulators ---------------------------------------------------------------------------------

/** value = (v.x + v.y) · 2^e; 0 is v = 0 (any e; ZE when nothing was added). */
struct Acc { v: vec2<f32>, e: i32 }

fn acc_zero() -> Acc {
  return Acc(vec2<f32>(0.0, 0.0), ZE);
}

/** a at exponent te when te is the larger (its value shifted down to match), else a. */
fn acc_lift(a: Acc, te: i32) -> Acc {
  var r = a;
  if (te > r.e) {
    r.v = sh2(r.v, r.e - te);
    r.e = te;
  }
  return r;
}

/** a + t · 2^te, for a term t in about [1, 4) (or 0). The running sum keeps the largest term's exponent. */
fn acc_add(a: Acc, t: vec2<f32>, te: i32) -> Acc {
  if (t.x == 0.0) { return a; }
  if (a.v.x == 0.0) { return Acc(t, te); }
  var r = acc_lift(a, te);
  r.v = xdf_add(r.v, sh2(t, te - r.e));
  return r;
}

/** acc_add for the per-element loop: nonnegative terms only, so the cheaper same-sign double-float addition
 * (one TwoSum, relative error ~2^-44) is enough. */
fn acc_add_pos(a: Acc, t: vec2<f32>, te: i32) -> Acc {
  if (t.x == 0.0) { return a; }
  if (a.v.x == 0.0) { return Acc(t, te); }
  var r = acc_lift(a, te);
  let u = sh2(t, te - r.e);
  let s = two_sum(r.v.x, u.x);
  let e = s.y + (r.v.y + u.y);
  let f = opq(s.x + e, e); // Fast2Sum (|s.x| ≥ |e|)
  r.v = vec2<f32>(f, e - (f - s.x));
  return r;
}

fn acc_merge(a: Acc, b: Acc) -> Acc {
  if (b.v.x == 0.0) { return a; }
  return acc_add(a, b.v, b.e);
}

// ---- the difference of an f32 and a baseline ---------------------------------------------------------------

/** |x − (h + l)| as (e, hi, lo): value = (hi + lo) · 2^e, hi in [1, 2), |lo| ≤ ulp(hi)/2 (canonical: hi is
 * the f32 rounding of the value's significand, so equal values give equal triples); zero: e = ZE. */
struct Diff { e: i32, h: f32, l: f32 }

/**
 * x − (h + ls · 2^h.e): x and h decoded, ls the baseline's low part relative to h (0 for an f32 baseline).
 * Exact for an f32 baseline; for a double-float baseline exact where x and h are within a factor 2 (the
 * common case), else within 2^-48 relative.
 */
fn diff_abs(x: Dec, h: Dec, ls: f32) -> Diff {
  let E = max(x.e, h.e);
  if (E == ZE) { return Diff(ZE, 0.0, 0.0); }
  let xs = sh(x.m, x.e - E);
  let hs = sh(h.m, h.e - E);
  let lsh = sh(ls, h.e - E);
  let s1 = two_sum(xs, -hs);
  let s2 = two_sum(s1.x, -lsh);
  let r = two_sum(s2.x, s1.y + s2.y);
  if (r.x == 0.0) { return Diff(ZE, 0.0, 0.0); }
  let k = expo(r.x);
  let sg = select(1.0, -1.0, r.x < 0.0);
  return Diff(E + k, sg * ldexp(r.x, -k), sg * ldexp(r.y, -k));
}

/** a ≥ b for canonical triples. */
fn diff_ge(a: Diff, b: Diff) -> bool {
  if (a.e != b.e) { return a.e > b.e; }
  if (a.h != b.h) { return a.h > b.h; }
  return a.l >= b.l;
}

// ---- a double-float baseline as the f64 value hi + lo --------------------------------------------------------

/**
 * The low part of a double-float baseline, relative to its decoded high part h and rounded as the f64 sum
 * hi + lo rounds (to a multiple of 2^-52 of h's binade, 2^-53 when |h.m| = 1 and lo has the other sign; ties
 * to even), so that h + result is exactly the f64 value the CPU metrics see. A low part below 2^CUT of h is 0
 * (the f64 sum is then hi).
 */
fn lo_as_f64(h: Dec, lo: Dec) -> f32 {
  if (lo.m == 0.0 || h.m == 0.0) { return 0.0; }
  let ls = sh(lo.m, lo.e - h.e);
  if (ls == 0.0) { return 0.0; }
  var q = 52;
  if (abs(h.m) == 1.0 && (ls < 0.0) != (h.m < 0.0)) { q = 53; }
  return ldexp(round(ldexp(ls, q)), -q);
}

/** Bits of the f32 rounding of h · 2^e + ls · 2^e (nearest even; Inf past the range). Results in the f32
 * subnormal range fall back to an f32 addition of the original pair (exact only where the adapter keeps
 * subnormals; such a baseline is smaller than 2^-126). */
fn round_f32_bits(h: Dec, ls: f32, hb: u32, lb: u32) -> u32 {
  if (ls == 0.0) { return hb; }
  let r = h.m + ls;
  if (r == 0.0) { return 0u; }
  let be = h.e + expo(r) + 127;
  let rb = bitcast<u32>(r);
  if (be >= 255) { return (rb & 0x80000000u) | 0x7f800000u; }
  if (be <= 0) { return bitcast<u32>(bitcast<f32>(hb) + bitcast<f32>(lb)); }
  return (rb & 0x807fffffu) | (u32(be) << 23u);
}

// ---- storage precisions and ulps ---------------------------------------------------------------------------

/** f32 bits → f16 bits, nearest even, overflow to ±Inf, subnormals kept (src/model/safetensors.ts
 * f32BitsToF16Bits, for non-NaN input). */
fn f16_bits(b: u32) -> u32 {
  let sign = (b >> 16u) & 0x8000u;
  let ex = (b >> 23u) & 0xffu;
  let mant = b & 0x7fffffu;
  if (ex > 142u) { return sign | 0x7c00u; } // ≥ 2^16 (and Inf): Inf
  if (ex >= 113u) {
    var h = ((ex - 112u) << 10u) | (mant >> 13u);
    let rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) == 1u)) { h += 1u; }
    return sign | h;
  }
  if (ex < 102u) { return sign; }
  let m = mant | 0x800000u;
  let shift = 126u - ex; // 14 … 24
  var h = m >> shift;
  let rest = m - (h << shift);
  let half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (h & 1u) == 1u)) { h += 1u; }
  return sign | h;
}

/** f32 bits → bf16 bits, nearest even (non-NaN input; Inf stays Inf, overflow gives Inf). */
fn bf16_bits(b: u32) -> u32 {
  return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

/** Distance in ulps of the storage precision (0 fp32, 1 fp16, 2 bf16) between two non-NaN f32 bit
 * patterns: the difference of their monotone ordinals (−0 and +0 are one point). */
fn ulp_dist(xb: u32, yb: u32, prec: u32) -> u32 {
  var bx = xb;
  var by = yb;
  var sbit = 0x80000000u;
  if (prec == 1u) {
    bx = f16_bits(xb);
    by = f16_bits(yb);
    sbit = 0x8000u;
  } else if (prec == 2u) {
    bx = bf16_bits(xb);
    by = bf16_bits(yb);
    sbit = 0x8000u;
  }
  let mx = bx & (sbit - 1u);
  let my = by & (sbit - 1u);
  if ((bx & sbit) == (by & sbit)) { return select(my - mx, mx - my, mx >= my); }
  return mx + my;
}

// ---- scaled per-thread sums (the element loop's accumulators) ------------------------------------------------
// The per-element loop of compare_tiles.wgsl keeps its sums as plain double-floats at one exponent per thread
// and sum kind instead of an exponent aligned per term (acc_add_pos above, ~10× the work). A term of exponent
// k is scaled by 2^-e with e the thread's scale: e starts at SC_MIN and is raised to min(k, SC_MAX) when a
// term has k > e + 20 (rare: only as the largest term so far grows), the sums shifted down with it. So a
// scaled term is below 2^21 (2^10 at SC_MAX: no f32 is above 2^129) and its square below 2^42; a term is
// never scaled below 2^-29 while e = SC_MIN (no f32 is below 2^-149), and once e was raised the sum holds a
// term ≥ 1, so what a square loses below f32's normal range is < 2^-100 of the sum. The workgroup's tree adds
// the threads' sums at the larger of their scales (sc_merge in compare_tiles.wgsl); only its total becomes the
// record's extended accumulators (acc_of).

const SC_MIN: i32 = -120;
const SC_MAX: i32 = 120;

/** 2^k as an f32 for k in [-126, 127], from its bits (no arithmetic). */
fn pow2(k: i32) -> f32 {
  return bitcast<f32>(u32(k + 127) << 23u);
}

/** s + t for nonnegative double-floats (one TwoSum and a Fast2Sum, relative error ~2^-44; as acc_add_pos). */
fn dd_add_pos(s: vec2<f32>, t: vec2<f32>) -> vec2<f32> {
  let u = two_sum(s.x, t.x);
  let e = u.y + (s.y + t.y);
  let f = opq(u.x + e, e); // Fast2Sum (|u.x| ≥ |e|)
  return vec2<f32>(f, e - (f - u.x));
}

/** A thread's sums at scale e (f = 2^-e): s1 and s2 are Σ t·2^-e and Σ t²·2^-2e (|a − b|), or Σ a²·2^-2e and
 * Σ b²·2^-2e (the two norms). */
struct Sc { e: i32, f: f32, s1: vec2<f32>, s2: vec2<f32> }

fn sc_zero() -> Sc {
  return Sc(SC_MIN, pow2(-SC_MIN), vec2<f32>(0.0, 0.0), vec2<f32>(0.0, 0.0));
}

/** s ready for a term of exponent k; `p1` is the power of the scale s1 is kept at (1 or 2; s2 always 2). */
fn sc_fit(s: Sc, k: i32, p1: i32) -> Sc {
  if (k <= s.e + 20) { return s; }
  let ne = min(k, SC_MAX);
  return Sc(ne, pow2(-ne), sh2(s.s1, p1 * (s.e - ne)), sh2(s.s2, 2 * (s.e - ne)));
}

/** The extended accumulator of v · 2^e (v normalized to [1, 2)). */
fn acc_of(v: vec2<f32>, e: i32) -> Acc {
  if (v.x == 0.0) { return acc_zero(); }
  let k = expo(v.x);
  return Acc(vec2<f32>(ldexp(v.x, -k), ldexp(v.y, -k)), e + k);
}

/** The canonical Diff of a nonzero exact difference r = r.x + r.y of f32 scale (as diff_abs normalizes). */
fn diff_of(r: vec2<f32>) -> Diff {
  let k = expo(r.x);
  let sg = select(1.0, -1.0, r.x < 0.0);
  return Diff(k, sg * ldexp(r.x, -k), sg * ldexp(r.y, -k));
}
