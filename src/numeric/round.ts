// Rounding a double to a narrower binary float format, round-to-nearest-even, with the format's subnormals and
// overflow to ±Inf: bf16, fp16, tf32 (10 stored mantissa bits, fp32's exponent range) and fp32. Used by the causes
// (a variant that rounds an operand or an output) and the anatomy (an error in units of each format's spacing).
// Imports nothing of ours: it sits below kernels, model, engine and compare.

export type NumFormat = 'bf16' | 'fp16' | 'tf32' | 'fp32';

interface FormatSpec {
  /** Stored mantissa bits (the leading 1 not counted). */
  mant: number;
  /** The exponent of the smallest normal number. */
  emin: number;
  /** The largest finite value. */
  max: number;
}

const SPEC: Record<NumFormat, FormatSpec> = {
  bf16: { mant: 7, emin: -126, max: (2 - 2 ** -7) * 2 ** 127 },
  fp16: { mant: 10, emin: -14, max: 65504 },
  tf32: { mant: 10, emin: -126, max: (2 - 2 ** -10) * 2 ** 127 },
  fp32: { mant: 23, emin: -126, max: (2 - 2 ** -23) * 2 ** 127 },
};

export const FORMATS: readonly NumFormat[] = ['bf16', 'fp16', 'tf32', 'fp32'];

/** The spacing of the format's representable numbers at |x| (one ULP there; the subnormal spacing below emin). */
export function ulpOf(format: NumFormat, x: number): number {
  const s = SPEC[format];
  const a = Math.abs(x);
  if (a === 0 || !Number.isFinite(a)) return 2 ** (s.emin - s.mant);
  let e = Math.floor(Math.log2(a));
  // log2 can be off by one next to a power of two: correct it.
  if (2 ** e > a) e--;
  else if (2 ** (e + 1) <= a) e++;
  return 2 ** (Math.max(s.emin, e) - s.mant);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** Bits an f32 drops to become the format, and Veltkamp's splitting factor 2^(53 - p) + 1 for p significant bits. */
const DROP: Record<NumFormat, number> = { bf16: 16, fp16: 13, tf32: 13, fp32: 0 };
const SPLIT: Record<NumFormat, number> = {
  bf16: 2 ** 45 + 1,
  fp16: 2 ** 42 + 1,
  tf32: 2 ** 42 + 1,
  fp32: 2 ** 29 + 1,
};

/**
 * x rounded to the nearest value of the format (ties to even); past the largest finite value, ±Inf. Fast where the
 * result is a normal number of the format: an f32 input by its bits (exact ties to even), any other double by
 * Veltkamp's split (round to nearest; a double exactly halfway between two values of the format has probability
 * 0 here); below the format's normal numbers by scaling to its spacing (exact ties to even); the rest by roundToExact. roundTo is checked against roundToExact in round.test.ts.
 */
export function roundTo(format: NumFormat, x: number): number {
  if (format === 'fp32') return Math.fround(x);
  const s = SPEC[format];
  const a = Math.abs(x);
  if (a >= 2 ** s.emin && a < s.max) {
    let r: number;
    if (Math.fround(x) === x) {
      f32[0] = x;
      const b = u32[0];
      const drop = DROP[format];
      const half = 1 << (drop - 1);
      u32[0] = (b + (half - 1) + ((b >>> drop) & 1)) & ~((1 << drop) - 1);
      r = f32[0];
    } else {
      const c = x * SPLIT[format];
      r = c - (c - x);
    }
    if (Math.abs(r) <= s.max) return r;
  } else if (a > 0 && a < 2 ** s.emin) {
    // Below the smallest normal the values are the multiples of one spacing q: x / q (exact, q a power of two) to
    // the nearest integer, ties to even, by adding and taking away 1.5 × 2^52 (|x / q| < 2^mant), times q. Zero
    // keeps x's sign, as roundToExact's does.
    const q = SUBNORMAL[format];
    const r = (x / q + ROUND_INT - ROUND_INT) * q;
    return r === 0 ? (x < 0 ? -0 : 0) : r;
  }
  return roundToExact(format, x);
}

/** Each format's spacing below its smallest normal number, and the addend that rounds a double below 2^51 to an
 * integer (ties to even). */
const SUBNORMAL: Record<NumFormat, number> = {
  bf16: 2 ** (SPEC.bf16.emin - SPEC.bf16.mant),
  fp16: 2 ** (SPEC.fp16.emin - SPEC.fp16.mant),
  tf32: 2 ** (SPEC.tf32.emin - SPEC.tf32.mant),
  fp32: 2 ** (SPEC.fp32.emin - SPEC.fp32.mant),
};
const ROUND_INT = 1.5 * 2 ** 52;

/** roundTo by the definition (the ULP at x, then ties to even): the oracle of the fast paths. */
export function roundToExact(format: NumFormat, x: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  if (format === 'fp32') return Math.fround(x);
  const s = SPEC[format];
  const q = ulpOf(format, x);
  const m = x / q; // exact: q is a power of two
  let r = Math.round(m);
  // Math.round rounds halves up: make ties go to even.
  if (Math.abs(m - Math.trunc(m)) === 0.5) r = 2 * Math.round(m / 2);
  const v = r * q;
  if (Math.abs(v) > s.max) {
    // Round-to-nearest overflows only past max + half an ULP at max.
    return Math.abs(x) >= s.max + ulpOf(format, s.max) / 2 ? Math.sign(x) * Infinity : Math.sign(x) * s.max;
  }
  return v;
}

/** Every element rounded to the format (a new array). */
export function roundArray(format: NumFormat, a: ArrayLike<number>): Float64Array {
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = roundTo(format, a[i]);
  return out;
}

/**
 * Every f32 value of `src` rounded to the format into `dst`: roundTo's result, its bit path run inline where the
 * value lies in the format's normal range (a weight matrix's rows, rounded by the hundred thousand), the rest through
 * roundTo. round.test.ts holds it to roundTo.
 */
export function roundF32Into(format: NumFormat, src: Float32Array, dst: Float64Array | Float32Array): void {
  const n = src.length;
  if (format === 'fp32') {
    for (let i = 0; i < n; i++) dst[i] = src[i];
    return;
  }
  const s = SPEC[format];
  const lo = 2 ** s.emin;
  const drop = DROP[format];
  const half = (1 << (drop - 1)) - 1;
  const mask = ~((1 << drop) - 1);
  const bits = new Uint32Array(src.buffer, src.byteOffset, n);
  for (let i = 0; i < n; i++) {
    const x = src[i];
    const a = Math.abs(x);
    if (a >= lo && a < s.max) {
      const b = bits[i];
      u32[0] = (b + half + ((b >>> drop) & 1)) & mask;
      const r = f32[0];
      if (Math.abs(r) <= s.max) {
        dst[i] = r;
        continue;
      }
    }
    dst[i] = roundTo(format, x);
  }
}

/**
 * fp16 rounding of an f32 value (`x` is taken as Math.fround(x)) by its bits: the same result as roundTo('fp16'),
 * several times faster where the value is an fp16 normal number (the emulation of an fp16 accumulator calls it for
 * every product); the rest goes through roundTo.
 */
export function roundF32ToF16(x: number): number {
  f32[0] = x;
  const b = u32[0];
  const exp = (b >>> 23) & 0xff;
  // fp16 normals have exponents -14..15 (biased f32 113..142); below, above and NaN/Inf take the general path.
  if (exp < 113 || exp > 142) return roundTo('fp16', f32[0]);
  u32[0] = (b + 0x0fff + ((b >>> 13) & 1)) & ~0x1fff;
  const r = f32[0];
  return Math.abs(r) > 65504 ? roundTo('fp16', x) : r;
}

/** fp32's unit roundoff, u = 2^-24. */
export const U32 = 2 ** -24;

/** γ(n) = n·u / (1 − n·u), u fp32's: the bound on the relative error of any order's fp32 sum of n + 1 terms. */
export function gammaF32(n: number): number {
  const m = Math.max(0, n);
  return (m * U32) / (1 - m * U32);
}
