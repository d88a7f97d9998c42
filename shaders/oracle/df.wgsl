// Double-float ("df") arithmetic: each value is an unevaluated pair of f32, value = hi + lo with
// |lo| <= ulp(hi) / 2, about 48 significant bits (~1e-14 relative) — the oracle's number type.
//
// DATA FORMAT (the contract for every oracle tensor on the GPU): `array<vec2<f32>>`, one vec2 per element,
// x = hi, y = lo, row-major, same shapes as the reference plan's taps (e.g. [T][D], scores [H][T][T]).
// A df tensor takes 8 bytes per element. Read it as hi + lo in f64 on the CPU.
//
// The including kernel declares `override DF_FMA: bool` (see two_prod).
//
// Error-free transforms only survive a compiler that keeps IEEE order. TwoProd has two forms: `fma(a, b, -p)`
// (DF_FMA = true; exact only where `fma` is really fused) and Dekker's product of split halves (DF_FMA = false;
// broken by a compiler that contracts `c - (c - a)` into an fma). The self-test picks the one that is exact on
// the adapter; nothing here is trusted on an adapter until that self-test has passed there.
//
// CONSTANTS MUST BE OPAQUE (the rule for every kernel that includes this file). A backend may rewrite float
// arithmetic whose operand is a compile-time constant: SwiftShader (Dawn, Node) turns two_sum(c, x) with a
// literal c into something that drops the error term (df_add(c, x) came back with f32-level error, 4e-8, where
// the same df_add on values read from memory is exact). What counts as compile-time constant there: literals,
// `const` values, `bitcast<f32>(u32 literal)` and `var<private>` values with an initializer all failed;
// anything computed from run-time data survived. So a constant that enters df arithmetic (a series
// coefficient, ln 2, 1/√2, even 1.0 or 2.0 in a df_add) goes through df_const(k, key) / f_const(k, key), where
// key is any run-time f32 (the function's own input): the value is k for every key except one NaN bit pattern
// (DF_NEVER), so the compiler cannot fold it, and the cost is a compare and a select. Values from uniforms and
// storage buffers are already opaque. Exact power-of-two scalings (x * 0.5) are safe as literals.
//
// ALGEBRA ON RUN-TIME VALUES TOO. NVIDIA's Vulkan compiler (H200, driver 580.159.04, Dawn) simplifies
// (a + b) − a to b even when a and b come from memory: TwoSum's error term came back 0 and every df op was
// f32-accurate (the self-test failed, as it must). So two_sum, fast_two_sum, two_prod and the Dekker split pass
// the value they round through df_opq(x, key), the same compare-and-select as df_const: the compiler can no
// longer relate s to a + b. Measured there with it: every transform exact, with DF_FMA = true (fma is fused)
// and false, and the functions within 6·2^-48 (tools/df-check.ts, 10^5 inputs per op). Without df_opq in
// two_prod and the split, the Dekker form (DF_FMA = false) is inexact there too. A new kernel that writes its
// own error-free arithmetic must do the same.
//
// Status: used by the GPU oracle; trusted on an adapter only after src/engine/df-selftest.ts has passed there
// (DF_FMA is chosen by that self-test: SwiftShader's `fma` is not fused, lo of two_prod comes back 0, so it
// needs DF_FMA = false). exp, erf, erfc and GELU are in df_math.wgsl (include after this file).
//
// DF_BREAK (tests only; 0 in every real pipeline): libraries the self-test must reject. 1 = two_sum without its
// error term (a naive sum); 2 = df_mul without the cross terms hi·lo (the error-free transforms still pass).

override DF_BREAK: u32 = 0u;

// A NaN bit pattern no arithmetic produces: the one key for which df_const returns the key instead of k.
const DF_NEVER: u32 = 0x7fa5a5a5u;

// k, opaque to the compiler (see CONSTANTS MUST BE OPAQUE): k for every key but the NaN pattern DF_NEVER.
fn df_const(k: vec2<f32>, key: f32) -> vec2<f32> {
  return select(k, vec2<f32>(key, key), bitcast<u32>(key) == DF_NEVER);
}

fn f_const(k: f32, key: f32) -> f32 {
  return select(k, key, bitcast<u32>(key) == DF_NEVER);
}

// x, opaque to the compiler: what the error-free transforms round (a + b, a·b) goes through this, so that no
// algebra can see that s − a came from (a + b) − a (see ALGEBRA in the header).
fn df_opq(x: f32, key: f32) -> f32 {
  return select(x, key, bitcast<u32>(key) == DF_NEVER);
}

// s + e == a + b exactly (Knuth TwoSum; no assumption on magnitudes).
fn two_sum(a: f32, b: f32) -> vec2<f32> {
  if (DF_BREAK == 1u) {
    return vec2<f32>(a + b, 0.0);
  }
  let s = df_opq(a + b, a);
  let bb = df_opq(s - a, b);
  let e = (a - (s - bb)) + (b - bb);
  return vec2<f32>(s, e);
}

// s + e == a + b exactly, requires |a| >= |b| (or a == 0) (Dekker Fast2Sum).
fn fast_two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = df_opq(a + b, a);
  let e = b - (s - a);
  return vec2<f32>(s, e);
}

// Veltkamp split: a == hi + lo exactly, each half with at most 12 significant bits.
fn df_split(a: f32) -> vec2<f32> {
  let c = df_opq(4097.0 * a, a);
  let hi = c - df_opq(c - a, a);
  return vec2<f32>(hi, a - hi);
}

// p + e == a * b exactly. DF_FMA: through fma (one rounding of a*b - p); where an adapter's `fma` is not fused
// (SwiftShader lowers it to a multiply and an add), by Dekker's product of split halves.
fn two_prod(a: f32, b: f32) -> vec2<f32> {
  let p = df_opq(a * b, a);
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
  if (DF_BREAK == 2u) {
    return fast_two_sum(p.x, p.y);
  }
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

// k with a = m · 4^k, m in [0.5, 2) (k clamped to ±60, where ldexp stays defined): sqrt and rsqrt work on m, so
// their intermediate products (y², a/y) stay far from the f32 range's ends, where a lo part would be flushed.
fn df_sqrt_scale(a: f32) -> i32 {
  return clamp(frexp(a).exp >> 1u, -60, 60);
}

// sqrt by two Newton steps y <- (y + m / y) / 2 in df from the f32 root (24 -> 48+ bits), on m = a / 4^k,
// then times 2^k. a <= 0 gives 0.
fn df_sqrt(a: vec2<f32>) -> vec2<f32> {
  if (a.x <= 0.0) {
    return vec2<f32>(0.0, 0.0);
  }
  let k = df_sqrt_scale(a.x);
  let m = ldexp(a, vec2<i32>(-2 * k));
  var y = df_from(sqrt(m.x));
  for (var i = 0; i < 2; i++) {
    y = df_mul_f(df_add(y, df_div(m, y)), 0.5);
  }
  return ldexp(y, vec2<i32>(k));
}

// 1/sqrt(a) by two Newton steps y <- y + y (1 - m y^2) / 2 in df from the f32 estimate, on m = a / 4^k, then
// times 2^-k. Requires a > 0.
fn df_rsqrt(a: vec2<f32>) -> vec2<f32> {
  let k = df_sqrt_scale(a.x);
  let m = ldexp(a, vec2<i32>(-2 * k));
  var y = df_from(inverseSqrt(m.x));
  for (var i = 0; i < 2; i++) {
    let r = df_sub(df_const(vec2<f32>(1.0, 0.0), a.x), df_mul(m, df_mul(y, y)));
    y = df_add(y, df_mul_f(df_mul(y, r), 0.5));
  }
  return ldexp(y, vec2<i32>(-k));
}
