// Double-float transcendental functions for the GPU oracle: df_exp, df_erf, df_erfc, df_gelu.
// Include after oracle/df.wgsl (the including kernel declares `override DF_FMA: bool`).
//
// Every constant below enters df arithmetic through df_const / f_const with the function's own input as key
// (see "CONSTANTS MUST BE OPAQUE" in df.wgsl): a literal operand of df_add is rewritten by SwiftShader's
// compiler and loses the lo part. Kernels that call these functions need no extra binding. df_erf, df_erfc and
// df_gelu are one body (df_erf_family): a kernel calling several compiles it once per call site.
//
// Accuracy, worst relative error over 10^5 seeded random inputs per function against f64 (u² = 2^-48 =
// 3.55e-15; tools/df-check.ts and src/kernels/oracle/df.test.ts, whose bound is 10u²), SwiftShader / NVIDIA H100
// (2026-11-27: 1.1 M inputs per function on SwiftShader, 2 × 10^5 on the H100; erfc's mid-range is sampled densely):
//   df_exp   2.0u² / 2.5u² (9e-15). Relative while the result's lo part is a normal f32 (exp(x) >= ~2^-100,
//            x >= ~-69); below, an absolute error under 2^-125 (a lo part under 2^-126 is flushed: the df format
//            ends there); 0 exactly below -104 (exp < 2^-150); +inf above 88.72. x <= 0 is what a causal
//            softmax needs.
//   df_erf   5.1u² / 5.0u² (2e-14), worst just above |x| = 0.5 (1 − erfc); ±1 exactly for |x| >= 9.
//   df_erfc  7.0u² / 6.1u², worst in the Taylor intervals (near x = 0.75 and 3); relative into the right tail (no
//            cancellation) while erfc(x) is a normal f32 (x < ~9.1); 2 − erfc(|x|) on the left.
//   df_gelu  6.6u² / 7.5u² (2.7e-14). 0.5·x·(1 + erf(x/√2)) (Hugging Face "gelu") for every finite f32 x,
//            relative while the result is a normal f32: the tail is built on e^(−x²/2) with x² split exactly, so
//            no cancellation and no rounding of x/√2 amplified by the exponent; x for x >= 13;
//            0 for x < -20 (|gelu| < 1e-80). NaN in, NaN out.
//
// Methods. exp: k = round(x / ln 2), r = x − k·ln 2 with ln 2 in three parts (16 + 16 + 48 bits, k·part exact)
// so r is exact to ~2^-80 even at k = 150; exp(r/16) − 1 by Taylor (9 terms), squared four times as
// m ← m(m + 2), scaled by 2^k. erf for |x| < 0.5: its Maclaurin series in x² (14 terms, alternating but with
// Σ|terms| < 1.2·erf). erfc for 0.5 <= x < 3: e^(−x²)·erfcx(x), erfcx by 13 Taylor terms at the centre of its
// interval of width 1/4 (df_erfcx_mid; the coefficients by the recurrence of erfcx's differential equation from one
// tabulated value). erfc for x >= 3: e^(−x²)·(2x/√π)/K(2x²), K the even contraction of Laplace's continued
// fraction K(y) = y + 1 − 1·2/(y + 5 − 3·4/(y + 9 − …)) evaluated bottom-up (stable) with N = 8 + 210/y terms
// (2^-56 truncation, measured in high precision for 0.35 <= x <= 9; at most 20 terms from x = 3). Before the
// Taylor intervals the continued fraction ran from x = 0.5, with up to ~430 terms (each a df division) for x
// just above it, and a warp waited on its slowest lane: the GPU oracle's GELU took 29 ms of a 410m forward's
// 120, now 1.6 (H100, 2026-11-27, bench/RESULTS.md "The oracle's GELU").

// 1/n! for n = 1..9 as df pairs (hi = f32(v), lo = f32(v − hi); from tools/df_constants.py).
const DF_EXP_TAYLOR = array<vec2<f32>, 9>(
  vec2<f32>(1.0, 0.0),
  vec2<f32>(0.5, 0.0),
  vec2<f32>(0.1666666716337204, -4.967053879312289e-09),
  vec2<f32>(0.0416666679084301, -1.2417634698280722e-09),
  vec2<f32>(0.008333333767950535, -4.34617203337595e-10),
  vec2<f32>(0.0013888889225199819, -3.3631094437103215e-11),
  vec2<f32>(0.00019841270113829523, -2.725596874933456e-12),
  vec2<f32>(2.4801587642286904e-05, -3.40699609366682e-13),
  vec2<f32>(2.7557318844628753e-06, 3.793571224297229e-14),
);

// ln 2 = DF_LN2_A + DF_LN2_B + DF_LN2_C (16 bits, 16 bits, df): k·A and k·B are exact for |k| < 256.
const DF_LN2_A: f32 = 0.693145751953125;
const DF_LN2_B: f32 = 1.4286197256296873e-06;
const DF_LN2_C = vec2<f32>(-1.2905320041778356e-11, -2.2829879883612685e-19);
const DF_INV_LN2: f32 = 1.4426950216293335;

// erf(x) = x · Σ c_n x^(2n), c_n = (2/√π)·(−1)^n / (n!·(2n + 1)), n = 0..13.
const DF_ERF_SERIES = array<vec2<f32>, 14>(
  vec2<f32>(1.128379225730896, -5.8635382771399236e-08),
  vec2<f32>(-0.37612637877464294, -1.0257194205109954e-08),
  vec2<f32>(0.11283791810274124, -1.3931900078034687e-09),
  vec2<f32>(-0.02686617150902748, 8.638962323281874e-10),
  vec2<f32>(0.005223977845162153, -2.1971996444491992e-10),
  vec2<f32>(-0.0008548327023163438, -2.8741498249310396e-14),
  vec2<f32>(0.00012055332626914605, 3.5487504861791974e-12),
  vec2<f32>(-1.4925650248187594e-05, -1.1021865793095151e-13),
  vec2<f32>(1.6462114444948384e-06, -7.905913303304837e-15),
  vec2<f32>(-1.6365844146548625e-07, -5.446863155010671e-15),
  vec2<f32>(1.4807192805221803e-08, 1.065741486446791e-17),
  vec2<f32>(-1.2290555240213052e-09, -6.150487382567624e-18),
  vec2<f32>(9.4227591007634e-11, -3.611298914429414e-19),
  vec2<f32>(-6.711366705436372e-12, -1.4972774295837333e-19),
);

const DF_TWO_OVER_SQRT_PI = vec2<f32>(1.128379225730896, -5.8635382771399236e-08);
const DF_INV_SQRT2 = vec2<f32>(0.7071067690849304, 1.2101617485882343e-08);
const DF_INV_SQRT_2PI = vec2<f32>(0.3989422917366028, -1.1335170135851058e-08);

// Below this |x| erf comes from its series; at and above it erfc from the continued fraction.
const DF_ERF_SPLIT: f32 = 0.5;

// erfc for DF_ERF_SPLIT <= |z| < DF_ERFCX_END (df_erfcx_mid): erfcx(c) = e^(c²)·erfc(c) at the interval centres
// c = 0.625 + 0.25·j, the same centres times √2 (GELU's, in x), and 1/k for k = 2..13 (tools/df_constants.py).
const DF_ERFCX_END: f32 = 3.0;
const DF_ERFCX_MID = array<vec2<f32>, 10>(
  vec2<f32>(0.5568138957023621, -1.482899936178228e-08),
  vec2<f32>(0.4643115699291229, 1.3273545818037746e-08),
  vec2<f32>(0.39569807052612305, 9.026872582751366e-09),
  vec2<f32>(0.3432959020137787, -1.215165301715615e-08),
  vec2<f32>(0.30226120352745056, 5.8360352106490154e-09),
  vec2<f32>(0.2694299817085266, 3.4561438155833457e-09),
  vec2<f32>(0.24267035722732544, 7.385329237052929e-09),
  vec2<f32>(0.2205056995153427, -7.310436256346975e-09),
  vec2<f32>(0.20188754796981812, 6.576198696706115e-09),
  vec2<f32>(0.18605493009090424, 4.593566860222609e-09),
);
const DF_ERFCX_MID_X = array<vec2<f32>, 10>(
  vec2<f32>(0.8838834762573242, 2.2586019166048743e-10),
  vec2<f32>(1.2374368906021118, -2.3525654313516497e-08),
  vec2<f32>(1.5909903049468994, -4.727716884644906e-08),
  vec2<f32>(1.9445436000823975, 4.818060972411331e-08),
  vec2<f32>(2.2980971336364746, -9.478019791231418e-08),
  vec2<f32>(2.6516504287719727, 6.775805472258867e-10),
  vec2<f32>(3.0052037239074707, 9.613535922881056e-08),
  vec2<f32>(3.358757257461548, -4.682544840761693e-08),
  vec2<f32>(3.712310552597046, 4.8632330162945436e-08),
  vec2<f32>(4.065864086151123, -9.432847747348205e-08),
);
const DF_INV_K = array<vec2<f32>, 12>(
  vec2<f32>(0.5, 0.0),
  vec2<f32>(0.3333333432674408, -9.934107758624577e-09),
  vec2<f32>(0.25, 0.0),
  vec2<f32>(0.20000000298023224, -2.9802322831784522e-09),
  vec2<f32>(0.1666666716337204, -4.967053879312289e-09),
  vec2<f32>(0.1428571492433548, -6.38621200366174e-09),
  vec2<f32>(0.125, 0.0),
  vec2<f32>(0.1111111119389534, -8.278422947149977e-10),
  vec2<f32>(0.10000000149011612, -1.4901161415892261e-09),
  vec2<f32>(0.09090909361839294, -2.709302115988521e-09),
  vec2<f32>(0.0833333358168602, -2.4835269396561444e-09),
  vec2<f32>(0.07692307978868484, -2.8656079731348427e-09),
);

// x² = a + b with a a normalised df and b the f32 remainder (|b| <~ 2^-47·x²): exact to ~2^-72·x², so that
// e^(−x²) keeps its relative accuracy where x² is large. Requires |x| < 2^60 (no overflow in the split).
struct DfSquare {
  a: vec2<f32>,
  b: f32,
}

fn df_square_exact(x: vec2<f32>) -> DfSquare {
  let p = two_prod(x.x, x.x); // hi²
  let q = two_prod(2.0 * x.x, x.y); // 2·hi·lo
  let s = two_sum(p.y, q.x);
  let t = fast_two_sum(p.x, s.x);
  let u = two_sum(t.y, s.y);
  let a = fast_two_sum(t.x, u.x);
  return DfSquare(a, u.y + q.y + x.y * x.y);
}

fn df_exp(x: vec2<f32>) -> vec2<f32> {
  if (x.x != x.x) {
    return x;
  }
  if (x.x < -104.0) {
    return vec2<f32>(0.0, 0.0);
  }
  if (x.x > 88.72) {
    let inf = x.x * 3.0e38; // overflows at run time (an infinite literal is a shader-creation error)
    return vec2<f32>(inf, 0.0);
  }
  let key = x.x;
  let k = round(x.x * f_const(DF_INV_LN2, key));
  var t = df_add_f(x, -(k * f_const(DF_LN2_A, key)));
  t = df_add_f(t, -(k * f_const(DF_LN2_B, key)));
  t = df_sub(t, df_mul_f(df_const(DF_LN2_C, key), k));
  let s = t * 0.0625; // r / 16, exact
  var p = df_const(DF_EXP_TAYLOR[8], key);
  for (var n = 7; n >= 0; n--) {
    p = df_add(df_const(DF_EXP_TAYLOR[n], key), df_mul(p, s));
  }
  var m = df_mul(p, s); // exp(r/16) − 1
  let two = f_const(2.0, key);
  for (var i = 0; i < 4; i++) {
    m = df_mul(m, df_add_f(m, two));
  }
  var e = df_add_f(m, f_const(1.0, key));
  var ki = i32(k);
  if (ki < -100) {
    // ldexp's exponent stays within what WGSL defines; the final scaling rounds once into the subnormals.
    e = ldexp(e, vec2<i32>(-60, -60));
    ki += 60;
  }
  return ldexp(e, vec2<i32>(ki, ki));
}

// e^(−(a + b)) for a square split by df_square_exact (b only matters to first order).
fn df_exp_neg_square(sq: DfSquare) -> vec2<f32> {
  let e = df_exp(df_neg(sq.a));
  return df_add_f(e, -e.x * sq.b);
}

// K(y) = y + 1 − 1·2/(y + 5 − 3·4/(y + 9 − …)), bottom-up, N = 8 + 210/y terms (y = 2x² >= 0.5).
fn df_erfc_cf(y: vec2<f32>) -> vec2<f32> {
  let key = y.x;
  let terms = u32(8.0 + 210.0 / y.x);
  var v = df_add_f(y, f32(4u * terms + 1u));
  for (var n = terms; n >= 1u; n--) {
    let a = f32((2u * n - 1u) * (2u * n));
    v = df_sub(df_add_f(y, f32(4u * n - 3u)), df_div(df_const(vec2<f32>(a, 0.0), key), v));
  }
  return v;
}

// erfcx(z) = e^(z²)·erfc(z) for DF_ERF_SPLIT <= z < DF_ERFCX_END, with a = z (gelu: a = |x|, z = a/√2, never
// rounded: h is formed from a and the centre in x). Taylor at the centre c of z's interval (width 1/4, |h| <= 1/8):
// erfcx solves y' = 2zy − 2/√π, so its coefficients follow (n + 1)·e(n+1) = 2c·e(n) + 2·e(n−1) from e(0) =
// erfcx(c), e(1) = 2c·e(0) − 2/√π; summed as terms t(n) = e(n)·h^n, t(n+1) = (2ch·t(n) + 2h²·t(n−1))/(n + 1),
// 13 of them (the 14th is below 2^-53 of the sum on every interval; the first-order term is at most a tenth).
fn df_erfcx_mid(a: vec2<f32>, gelu: bool, key: f32) -> vec2<f32> {
  let zx = select(a.x, a.x * 0.70710678, gelu);
  let j = min(u32(max(zx - DF_ERF_SPLIT, 0.0) * 4.0), 9u);
  let c = f_const(0.625 + 0.25 * f32(j), key); // exact
  var h: vec2<f32>;
  if (gelu) {
    h = df_mul(df_sub(a, df_const(DF_ERFCX_MID_X[j], key)), df_const(DF_INV_SQRT2, key));
  } else {
    h = df_add_f(a, -c);
  }
  let u = df_mul_f(h, 2.0 * c);
  let v = df_mul(h, h) * 2.0;
  var t0 = df_const(DF_ERFCX_MID[j], key);
  var t1 = df_sub(df_mul(u, t0), df_mul(h, df_const(DF_TWO_OVER_SQRT_PI, key)));
  var sum = df_add(t0, t1);
  for (var n = 0u; n < 11u; n++) {
    let t2 = df_mul(df_add(df_mul(u, t1), df_mul(v, t0)), df_const(DF_INV_K[n], key)); // ÷ (n + 2)
    sum = df_add(sum, t2);
    t0 = t1;
    t1 = t2;
  }
  return sum;
}

// erf(x) for |x| < 0.5 by its series.
fn df_erf_series(x: vec2<f32>) -> vec2<f32> {
  let key = x.x;
  let w = df_mul(x, x);
  var s = df_const(DF_ERF_SERIES[13], key);
  for (var n = 12; n >= 0; n--) {
    s = df_add(df_const(DF_ERF_SERIES[n], key), df_mul(s, w));
  }
  return df_mul(x, s);
}

// The erf family in one body, so a kernel that needs several of them (the probe) compiles one copy of the series,
// the continued fraction and exp: mode 0 = erf(x), 1 = erfc(x), 2 = gelu(x). With z the erf argument (x, or
// x/√2 for gelu): |z| < 0.5 by the series; otherwise through C = erfc(|z|) = e^(−z²)·(2|z|/√π)/K(2z²), where
// z² comes from x² split exactly (z = x/√2 is never rounded in the tail: e^(−x²/2)·|x|·√(2/π)/K(x²)).
fn df_erf_family(x: vec2<f32>, mode: u32) -> vec2<f32> {
  if (x.x != x.x) {
    return x;
  }
  let key = x.x;
  let gelu = mode == 2u;
  let pos = x.x >= 0.0;
  let h = x * 0.5;
  // Where the result no longer depends on the tail (beyond df precision, or under the smallest f32).
  if (gelu) {
    if (x.x >= 13.0) {
      return x; // 1 − erf(13/√2) < 1e-37
    }
    if (x.x < -20.0) {
      return vec2<f32>(0.0, 0.0); // |gelu(−20)| < 1e-80
    }
  } else if (abs(x.x) >= 9.0) {
    // erfc(9) < 5e-37: erf = ±1; erfc(x >= 9) is still computed (a normal f32 down to x ≈ 9.1) below 11.
    if (mode == 0u) {
      return select(vec2<f32>(-1.0, 0.0), vec2<f32>(1.0, 0.0), pos);
    }
    if (!pos) {
      return vec2<f32>(2.0, 0.0);
    }
    if (x.x >= 11.0) {
      return vec2<f32>(0.0, 0.0); // erfc(11) < 2^-150
    }
  }
  // The result is alpha + beta·t, one df multiply-add for every mode and branch (a smaller shader):
  //   series (t = erf(z)):      erf t;  erfc 1 − t;  gelu h + h·t
  //   tail (t = erfc(|z|)):     erf ±(1 − t);  erfc t (x > 0), 2 − t;  gelu x − h·t (x > 0), t = h·erfc (x < 0,
  //                             as (h·num)/K: erfc alone is a subnormal f32 near x = −13 where gelu is not yet;
  //                             below |z| = 3, h·(e^(−z²)·erfcx)).
  var t: vec2<f32>;
  var alpha: vec2<f32>;
  var beta: vec2<f32>;
  let zs = select(x, df_mul(x, df_const(DF_INV_SQRT2, key)), gelu);
  if (abs(zs.x) < DF_ERF_SPLIT) {
    t = df_erf_series(zs);
    alpha = select(select(vec2<f32>(0.0), vec2<f32>(1.0, 0.0), mode == 1u), h, gelu);
    beta = select(select(vec2<f32>(1.0, 0.0), vec2<f32>(-1.0, 0.0), mode == 1u), h, gelu);
  } else {
    let ax = select(df_neg(x), x, pos);
    let sq = df_square_exact(x);
    // erf/erfc: e^(−x²), K(2x²), 2/√π. gelu: e^(−x²/2), K(x²), √(2/π) = 2·(1/√(2π)).
    let s = select(1.0, 0.5, gelu);
    let e = df_exp_neg_square(DfSquare(sq.a * s, sq.b * s));
    if (abs(zs.x) < DF_ERFCX_END) {
      t = df_mul(e, df_erfcx_mid(ax, gelu, key));
      if (gelu && !pos) {
        t = df_mul(h, t);
      }
    } else {
      let k = df_erfc_cf(sq.a * (2.0 * s));
      let p = select(DF_TWO_OVER_SQRT_PI, DF_INV_SQRT_2PI * 2.0, gelu);
      var num = df_mul(e, df_mul(ax, df_const(p, key)));
      if (gelu && !pos) {
        num = df_mul(h, num);
      }
      t = df_div(num, k);
    }
    let sgn = select(-1.0, 1.0, pos);
    if (mode == 0u) {
      alpha = vec2<f32>(sgn, 0.0);
      beta = vec2<f32>(-sgn, 0.0);
    } else if (mode == 1u) {
      alpha = select(vec2<f32>(2.0, 0.0), vec2<f32>(0.0), pos);
      beta = vec2<f32>(sgn, 0.0);
    } else {
      alpha = select(vec2<f32>(0.0), x, pos);
      beta = select(vec2<f32>(1.0, 0.0), df_neg(h), pos);
    }
  }
  return df_add(df_const(alpha, key), df_mul(df_const(beta, key), t));
}

fn df_erf(x: vec2<f32>) -> vec2<f32> {
  return df_erf_family(x, 0u);
}

fn df_erfc(x: vec2<f32>) -> vec2<f32> {
  return df_erf_family(x, 1u);
}

fn df_gelu(x: vec2<f32>) -> vec2<f32> {
  return df_erf_family(x, 2u);
}
