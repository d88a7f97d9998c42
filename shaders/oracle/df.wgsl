// Double-float ("df") arithmetic: each value is an unevaluated pair of f32, value = hi + lo with
// |lo| <= ulp(hi) / 2, about 48 significant bits (~1e-14 relative) — the oracle's number type.
//
// DATA FORMAT (the contract for every oracle tensor on the GPU): `array<vec2<f32>>`, one vec2 per element,
// x = hi, y = lo, row-major, same shapes as the reference plan's taps (e.g. [T][D], scores [H][T][T]).
// A df tensor takes 8 bytes per element. Read it as hi + lo in f64 on the CPU.
//
// The including kernel declares `override DF_FMA: bool` (see two_prod).
//
// Error-free transforms only survive a compiler that keeps IEEE order and does not contract: TwoProd uses
// `fma(a, b, -p)` (never Dekker splitting, which a contracting compiler breaks). Nothing here is trusted on
// an adapter until the oracle's self-test has passed there.
//
// Status: library only, no kernel or committed test uses it yet. Checked by hand on SwiftShader (Dawn, Node),
// inputs read from a storage buffer, DF_FMA = false: two_sum, two_prod (Dekker), df_div, df_sqrt, df_rsqrt
// within 1e-15 relative of fp64. Known broken there: df_exp (1e-9 relative). Cause found: a df_add whose
// operand is a literal constant (the Taylor coefficients) loses the lo part (f32-level error; the same df_add on
// values read from memory is exact): the backend reassociates two_sum when an operand is a known constant. Fix
// to make: load such constants from a buffer (opaque to the compiler). With DF_FMA = true SwiftShader's `fma`
// is not fused (lo of two_prod comes back 0), so SwiftShader needs DF_FMA = false.

// s + e == a + b exactly (Knuth TwoSum; no assumption on magnitudes).
fn two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = a + b;
  let bb = s - a;
  let e = (a - (s - bb)) + (b - bb);
  return vec2<f32>(s, e);
}

// s + e == a + b exactly, requires |a| >= |b| (or a == 0) (Dekker Fast2Sum).
fn fast_two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = a + b;
  let e = b - (s - a);
  return vec2<f32>(s, e);
}

// Veltkamp split: a == hi + lo exactly, each half with at most 12 significant bits.
fn df_split(a: f32) -> vec2<f32> {
  let c = 4097.0 * a;
  let hi = c - (c - a);
  return vec2<f32>(hi, a - hi);
}

// p + e == a * b exactly. DF_FMA: through fma (one rounding of a*b - p); where an adapter's `fma` is not fused
// (SwiftShader lowers it to a multiply and an add), by Dekker's product of split halves.
fn two_prod(a: f32, b: f32) -> vec2<f32> {
  let p = a * b;
  if (DF_FMA) {
    return vec2<f32>(p, fma(a, b, -p));
  }
  let x = df_split(a);
  let y = df_split(b);
  let e = ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y;
  return vec2<f32>(p, e);
}

fn df_from(a: f32) -> vec2<f32> {
  return vec2<f32>(a, 0.0);
}

fn df_neg(a: vec2<f32>) -> vec2<f32> {
  return vec2<f32>(-a.x, -a.y);
}

// Accurate addition (both halves summed error-free; relative error ~2 ulp of df).
fn df_add(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let s = two_sum(a.x, b.x);
  let t = two_sum(a.y, b.y);
  var r = fast_two_sum(s.x, s.y + t.x);
  r = fast_two_sum(r.x, r.y + t.y);
  return r;
}

fn df_sub(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  return df_add(a, df_neg(b));
}

fn df_add_f(a: vec2<f32>, b: f32) -> vec2<f32> {
  let s = two_sum(a.x, b);
  return fast_two_sum(s.x, s.y + a.y);
}

fn df_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let p = two_prod(a.x, b.x);
  let e = p.y + (a.x * b.y + a.y * b.x);
  return fast_two_sum(p.x, e);
}

// df times an f32 (a weight: exact in the hi part).
fn df_mul_f(a: vec2<f32>, b: f32) -> vec2<f32> {
  let p = two_prod(a.x, b);
  return fast_two_sum(p.x, p.y + a.y * b);
}

// Long division: three f32 quotient digits, each remainder computed in df.
fn df_div(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let q1 = a.x / b.x;
  var r = df_sub(a, df_mul_f(b, q1));
  let q2 = r.x / b.x;
  r = df_sub(r, df_mul_f(b, q2));
  let q3 = r.x / b.x;
  return df_add_f(fast_two_sum(q1, q2), q3);
}

// sqrt by two Newton steps y <- (y + a / y) / 2 in df from the f32 root (24 -> 48+ bits). a <= 0 gives 0.
fn df_sqrt(a: vec2<f32>) -> vec2<f32> {
  if (a.x <= 0.0) {
    return vec2<f32>(0.0, 0.0);
  }
  var y = df_from(sqrt(a.x));
  for (var i = 0; i < 2; i++) {
    y = df_mul_f(df_add(y, df_div(a, y)), 0.5);
  }
  return y;
}

// 1/sqrt(a) by two Newton steps y <- y + y (1 - a y^2) / 2 in df from the f32 estimate. Requires a > 0.
fn df_rsqrt(a: vec2<f32>) -> vec2<f32> {
  var y = df_from(inverseSqrt(a.x));
  for (var i = 0; i < 2; i++) {
    let r = df_sub(df_from(1.0), df_mul(a, df_mul(y, y)));
    y = df_add(y, df_mul_f(df_mul(y, r), 0.5));
  }
  return y;
}

// ln 2 as a df pair: hi = f32(ln 2), lo = f32(ln 2 - hi).
const DF_LN2 = vec2<f32>(0.693147182464599609375, -1.9046542121259336e-9);

// exp: x = k ln2 + r, |r| <= ln2 / 2; r / 16 by Taylor (9 terms, truncation < 1e-18) as em1 = exp(r/16) - 1;
// squared four times as em1 <- em1 (em1 + 2), which keeps the relative error of the small quantity;
// then scaled by 2^k. Underflows to 0 below about -87 (f32 range), overflows above about 88.
fn df_exp(x: vec2<f32>) -> vec2<f32> {
  if (x.x < -104.0) {
    return vec2<f32>(0.0, 0.0);
  }
  let k = round(x.x / DF_LN2.x);
  let r = df_mul_f(df_sub(x, df_mul_f(DF_LN2, k)), 0.0625);
  // Horner for r + r^2/2! + ... + r^9/9!; 1/n! as df pairs (hi = f32(1/n!), lo = f32(1/n! - hi)).
  var t = vec2<f32>(2.7557318844628753e-6, 3.7935712242972291e-14);
  t = df_add(vec2<f32>(2.4801587642286904e-5, -3.4069960936668198e-13), df_mul(t, r));
  t = df_add(vec2<f32>(1.9841270113829523e-4, -2.7255968749334558e-12), df_mul(t, r));
  t = df_add(vec2<f32>(1.3888889225199819e-3, -3.3631094437103215e-11), df_mul(t, r));
  t = df_add(vec2<f32>(8.3333337679505348e-3, -4.3461720333759502e-10), df_mul(t, r));
  t = df_add(vec2<f32>(4.1666667908430099e-2, -1.2417634698280722e-9), df_mul(t, r));
  t = df_add(vec2<f32>(1.6666667163372040e-1, -4.9670538793122887e-9), df_mul(t, r));
  t = df_add(df_from(0.5), df_mul(t, r));
  t = df_add(df_from(1.0), df_mul(t, r));
  var em1 = df_mul(t, r);
  for (var i = 0; i < 4; i++) {
    em1 = df_mul(em1, df_add_f(em1, 2.0));
  }
  let e = df_add_f(em1, 1.0);
  let ki = i32(k);
  return vec2<f32>(ldexp(e.x, ki), ldexp(e.y, ki));
}
