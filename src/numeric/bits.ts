// Bit-level conversions between f32 and the 16-bit float formats (f16, bf16), round to nearest, ties to even,
// done on the bits with integer operations, and the f32 bit pattern of a number. The weights loader, the seeded
// weights, the precision rounding of the oracles and the ULP metrics share them. Imports nothing of ours.

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** The f32 bit pattern of Math.fround(x). */
export function f32Bits(x: number): number {
  scratchF32[0] = x;
  return scratchU32[0];
}

/** The f32 value of a bit pattern (NaN payloads are not guaranteed to survive a JS number). */
export function f32FromBits(bits: number): number {
  scratchU32[0] = bits;
  return scratchF32[0];
}

/**
 * f32 bits -> f16 bits, round to nearest, ties to even; overflow to ±inf, gradual underflow to subnormals and
 * ±0; NaN stays NaN, keeping the top 10 payload bits (or the quiet bit when those are all zero).
 */
export function f32BitsToF16Bits(b: number): number {
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const mant = b & 0x7fffff;
  if (exp === 0xff) return mant === 0 ? sign | 0x7c00 : sign | 0x7c00 | (mant >>> 13 || 0x200);
  if (exp > 142) return sign | 0x7c00; // >= 2^16: past the rounding range of f16, inf
  if (exp >= 113) {
    // normal f16 (the carry of a round-up may reach the exponent and, past 65504, inf: both are right)
    let h = ((exp - 112) << 10) | (mant >>> 13);
    const rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest === 0x1000 && (h & 1) === 1)) h++;
    return sign | h;
  }
  if (exp < 102) return sign; // < 2^-25: rounds to zero (exactly 2^-25 is a tie, to even 0)
  // subnormal f16: units of 2^-24; significand m * 2^(exp - 150)
  const m = mant | 0x800000;
  const shift = 126 - exp; // 14..24
  let h = m >>> shift;
  const rest = m - h * 2 ** shift;
  const half = 2 ** (shift - 1);
  if (rest > half || (rest === half && (h & 1) === 1)) h++;
  return sign | h;
}

/** f16 bits -> f32 bits, exact (subnormals normalised, inf and NaN payloads kept). */
export function f16BitsToF32Bits(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >>> 10) & 0x1f;
  let mant = h & 0x3ff;
  if (exp === 0x1f) return (sign | 0x7f800000 | (mant << 13)) >>> 0;
  if (exp !== 0) return (sign | ((exp + 112) << 23) | (mant << 13)) >>> 0;
  if (mant === 0) return sign >>> 0;
  let e = 113; // normalise the subnormal: value = mant * 2^-24
  while ((mant & 0x400) === 0) {
    mant <<= 1;
    e--;
  }
  return (sign | (e << 23) | ((mant & 0x3ff) << 13)) >>> 0;
}

/** f32 bits -> bf16 bits, round to nearest, ties to even on the low 16 bits; NaN stays NaN. */
export function f32BitsToBf16Bits(b: number): number {
  if ((b & 0x7fffffff) > 0x7f800000) {
    const h = b >>> 16;
    return (h & 0x7f) === 0 ? h | 0x40 : h;
  }
  return ((b >>> 0) + 0x7fff + ((b >>> 16) & 1)) >>> 16;
}

/** The f16 value nearest to Math.fround(x) (ties to even), as its 16-bit pattern. */
export function f32ToF16Bits(x: number): number {
  return f32BitsToF16Bits(f32Bits(x));
}

/** The value of an f16 bit pattern (exact; every f16 is an f32). */
export function f16BitsToF32(h: number): number {
  return f32FromBits(f16BitsToF32Bits(h & 0xffff));
}

/** The bf16 value nearest to Math.fround(x) (ties to even), as its 16-bit pattern. */
export function f32ToBf16Bits(x: number): number {
  return f32BitsToBf16Bits(f32Bits(x));
}

/** The value of a bf16 bit pattern (exact: the high half of an f32). */
export function bf16BitsToF32(h: number): number {
  return f32FromBits(((h & 0xffff) << 16) >>> 0);
}
