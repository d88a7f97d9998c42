// fp64 references for the double-float probe's ops (tests and the adapter self-test): the value each op should
// produce for its df operands, read as hi + lo in f64. Checked against the exact BigInt oracle (df-exact.ts) in
// df-reference.test.ts. exp is Math.exp (< 1 ulp). erf is the CPU oracle's (src/kernels/cpu/gelu.ts, a few
// ulps). erfc and GELU's left tail are computed here: the CPU oracle's erfc takes 1 − erf below 1 (2e-15
// relative near 0.9, cancellation) and its gelu rounds x/√2 to f64, which costs ~2z² ulps in the tail (1e-14
// at x = −14) — both fine for the fp32 model oracle, not for judging a df function.
import { erf, erfc, gelu } from '../cpu/gelu';
import type { DfOp } from './df-test-kernel';

export type DfPairIn = readonly [number, number];

const INV_SQRT_2PI = 0.3989422804014327; // 1/√(2π)
const TWO_OVER_SQRT_PI = 1.1283791670955126; // 2/√π

/** Dekker's exact product in f64: a·b = p + e. */
function twoProd64(a: number, b: number): [number, number] {
  const p = a * b;
  const split = (v: number): [number, number] => {
    const c = 134217729 * v; // 2^27 + 1
    const h = c - (c - v);
    return [h, v - h];
  };
  const [ah, al] = split(a);
  const [bh, bl] = split(b);
  return [p, ah * bh - p + ah * bl + al * bh + al * bl];
}

/** K(y) = y + 1 − 1·2/(y + 5 − 3·4/(y + 9 − …)) bottom-up (erfc(z) = e^(−z²)·(2z/√π)/K(2z²)), y >= 0.5;
 * 12 + 220/y terms (truncation < 2^-56, measured in high precision down to y = 0.25). */
function laplaceK(y: number): number {
  const terms = Math.ceil(12 + 220 / y);
  let g = y + 1 + 4 * terms;
  for (let n = terms; n >= 1; n--) g = y + 1 + 4 * (n - 1) - ((2 * n - 1) * (2 * n)) / g;
  return g;
}

/** Exact GELU in f64 with full relative precision in the left tail (x < −1: −x²·e^(−x²/2)/(√(2π)·K(x²))). */
export function geluRef(x: number): number {
  if (x >= -1 || Number.isNaN(x)) return gelu(x);
  if (x < -40) return 0;
  const [h, l] = twoProd64(x, x); // x² = h + l exactly
  const e = Math.exp(-h / 2) * (1 - l / 2);
  return (-h * e * INV_SQRT_2PI) / laplaceK(h);
}

/** erfc in f64 with full relative precision: the continued fraction for x >= 0.5 (x² split exactly), the CPU
 * oracle's 1 − erf below (erf/erfc < 1.1 there) and 2 − erfc(|x|) for x <= −0.5. */
export function erfcRef(x: number): number {
  if (!(x >= 0.5)) return erfc(x);
  if (x >= 27) return 0;
  const [h, l] = twoProd64(x, x);
  const e = Math.exp(-h) * (1 - l);
  return (e * TWO_OVER_SQRT_PI * x) / laplaceK(2 * h);
}

/** s + e = a + b exactly (Knuth), in f64. */
export function twoSum64(a: number, b: number): [number, number] {
  const s = a + b;
  const bb = s - a;
  return [s, a - (s - bb) + (b - bb)];
}

/** The value op(a, b) should have (f64). The error-free transforms are exact here (their f32 inputs give
 * sums and products that f64 holds, or an f64 TwoSum pair whose hi is compared). */
export function dfReference(op: DfOp, a: DfPairIn, b: DfPairIn): number {
  const x = a[0] + a[1];
  const y = b[0] + b[1];
  switch (op) {
    case 'two_sum':
    case 'fast_two_sum':
      return a[0] + b[0];
    case 'two_prod':
      return a[0] * b[0]; // 24 × 24 bits: exact in f64
    case 'add':
      return x + y;
    case 'sub':
      return x - y;
    case 'mul':
      return x * y;
    case 'div':
      return x / y;
    case 'sqrt':
      return Math.sqrt(x);
    case 'rsqrt':
      return 1 / Math.sqrt(x);
    case 'exp':
      return Math.exp(x);
    case 'erf':
      return erf(x);
    case 'erfc':
      return erfcRef(x);
    case 'gelu':
      return geluRef(x);
    case 'add_f':
      return x + b[0];
    case 'mul_f':
      return x * b[0];
  }
}

/** A double split into a normalised df pair [hi, lo] whose hi + lo is exactly v (throws when it is not). */
export function dfSplitExact(v: number): [number, number] {
  const hi = Math.fround(v);
  const lo = Math.fround(v - hi);
  if (hi + lo !== v || !Number.isFinite(hi)) throw new Error(`${v} is not a df pair exactly`);
  return [hi, lo];
}

/** Whether an error-free transform's result (s, e) is exact: s + e equals a + b (two_sum, fast_two_sum) or
 * a·b (two_prod) exactly, with |e| <= ulp-sized (compared as normalised f64 pairs, which are unique). */
export function eftExact(op: DfOp, a: number, b: number, s: number, e: number): boolean {
  if (!Number.isFinite(s) || !Number.isFinite(e)) return false;
  const got = twoSum64(s, e);
  const want = op === 'two_prod' ? [a * b, 0] : twoSum64(a, b);
  return got[0] === want[0] && got[1] === want[1] && Math.abs(e) <= Math.abs(s) * 2 ** -24;
}
