// Error metrics between a result and a reference. NaN/Inf are counted, never folded into a number.

import { f32Bits, f32ToBf16Bits, f32ToF16Bits } from '../numeric/bits';
import type { Precision } from '../numeric/precision';

export interface BasicMetrics {
  maxAbs: number;
  meanAbs: number;
  /** ‖a − b‖₂ / ‖b‖₂ (Infinity when b is all zeros and a is not; 0 when both are). */
  relL2: number;
  nonFinite: number;
}

export function basicMetrics(a: ArrayLike<number>, b: ArrayLike<number>): BasicMetrics {
  if (a.length !== b.length) throw new Error(`metrics: length ${a.length} vs ${b.length}`);
  let maxAbs = 0;
  let sumAbs = 0;
  let num = 0;
  let den = 0;
  let nonFinite = 0;
  let finite = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      nonFinite++;
      continue;
    }
    const e = Math.abs(x - y);
    maxAbs = Math.max(maxAbs, e);
    sumAbs += e;
    num += e * e;
    den += y * y;
    finite++;
  }
  const relL2 = num === 0 ? 0 : den === 0 ? Number.POSITIVE_INFINITY : Math.sqrt(num / den);
  return { maxAbs, meanAbs: finite ? sumAbs / finite : 0, relL2, nonFinite };
}

// ---- full metrics ------------------------------------------------------------------------------------------
//
// Conventions (fullMetrics, the per-slice functions and the histogram):
//  - `a` is the result under test, `b` the baseline.
//  - Magnitude metrics are taken over the positions where BOTH values are finite. Non-finite values are counted
//    (nanCount, infCount, baselineNonFinite), never folded in as 0. A position where both are NaN, or both are
//    the same infinity, agrees: it is left out of the magnitudes and is not a mismatch.
//  - Non-finite mismatch rule: if any position has exactly one of a, b non-finite, or both non-finite but
//    different (NaN vs ±Inf, +Inf vs −Inf), the result cannot be said to match however small the finite part
//    is, so the headline metrics are poisoned: nonFiniteMismatch = true, maxAbs = relL2 = cosineDistance =
//    Infinity and sqnrDb = −Infinity. meanAbs and maxUlp stay the values over the both-finite positions (a
//    diagnostic of the finite part), finiteCount says how many those are.
//  - Accumulation is in double. Sums of squares are taken after multiplying every term by one power of two
//    (exact) chosen from the largest finite magnitude, so they can neither overflow nor lose the small terms
//    to underflow, whatever the input range (f32 inputs would already be safe unscaled: an f32 squared lies in
//    [2^-298, 2^256] and 1e8 of them sum far below the double range). Plain summation of n ≤ 1e8 nonnegative
//    terms has relative error ≤ n·2^-53 ≈ 1e-8 in the worst case (≈ √n·2^-53 typically), far below what these
//    metrics are read to (2–3 digits). The ratio metrics (relL2, sqnrDb, cosineDistance) are scale-free, so
//    the common scale cancels.
//  - cosineDistance is computed as (‖a−b‖² − (‖a‖−‖b‖)²) / (2‖a‖‖b‖), algebraically 1 − a·b/(‖a‖‖b‖) but without
//    the cancellation of 1 − (a number near 1): its absolute error is ~ relL2·2^-53 instead of ~2^-53, which
//    matters since close results have cosine distances near relL2²/2 ≈ 1e-14 in fp32.

export interface FullMetrics {
  n: number;
  /** max |a − b| over both-finite positions (Infinity on a non-finite mismatch). */
  maxAbs: number;
  /** mean |a − b| over both-finite positions (0 when there are none). */
  meanAbs: number;
  /** ‖a − b‖ / ‖b‖: 0 when equal (both zero included), Infinity when b is zero and a is not, or on mismatch. */
  relL2: number;
  /** 1 − a·b/(‖a‖‖b‖) in [0, 2]: 0 when both are zero, 1 when exactly one is; Infinity on mismatch. */
  cosineDistance: number;
  /** 10·log10(‖b‖²/‖a − b‖²): +Infinity when equal, −Infinity when b is zero and a is not, or on mismatch. */
  sqnrDb: number;
  /** Max distance in ulps of the storage precision, over both-finite positions (see ulpDistance). */
  maxUlp: number;
  /** NaN in a. */
  nanCount: number;
  /** ±Inf in a. */
  infCount: number;
  /** NaN or ±Inf in b. */
  baselineNonFinite: number;
  /** Positions where exactly one of a, b is non-finite, or both are but differ. */
  mismatchedNonFinite: number;
  /** mismatchedNonFinite > 0: the headline metrics are poisoned (see the rule above). */
  nonFiniteMismatch: boolean;
  /** Positions where both are finite (what the magnitudes are taken over). */
  finiteCount: number;
}

/** Monotone integer ordinal of a sign-magnitude bit pattern: −0 and +0 both map to 0. */
function ordinal(bits: number, signBit: number): number {
  const mag = bits & (signBit - 1);
  return bits & signBit ? -mag : mag;
}

/**
 * Distance between x and y in units in the last place of the storage precision of `precision`: both values
 * are rounded as the kernels store them (to f32, then to f16 for fp16/fp16acc or bf16 for bf16, nearest even)
 * and the result is the difference of the monotone ordinals of their bit patterns. So −0 and +0 are 0 apart,
 * a distance across zero counts the steps on both sides, subnormals are one step each, and a value that
 * overflows the storage format is its infinity (one step past the largest finite). NaN if either is NaN; 0
 * for the same infinity.
 */
export function ulpDistance(x: number, y: number, precision: Precision): number {
  if (Number.isNaN(x) || Number.isNaN(y)) return Number.NaN;
  let ox: number;
  let oy: number;
  if (precision === 'fp16' || precision === 'fp16acc') {
    ox = ordinal(f32ToF16Bits(x), 0x8000);
    oy = ordinal(f32ToF16Bits(y), 0x8000);
  } else if (precision === 'bf16') {
    ox = ordinal(f32ToBf16Bits(x), 0x8000);
    oy = ordinal(f32ToBf16Bits(y), 0x8000);
  } else {
    ox = ordinal(f32Bits(x), 0x80000000);
    oy = ordinal(f32Bits(y), 0x80000000);
  }
  return Math.abs(ox - oy);
}

/** Whether two values, at least one non-finite, disagree (NaN agrees with NaN, an infinity with itself). */
function nonFiniteDiffers(x: number, y: number): boolean {
  return !(Number.isNaN(x) && Number.isNaN(y)) && x !== y;
}

/** Power of two that brings `max` near 1, bounded so that it stays a normal double. */
function scaleFor(max: number): number {
  if (max === 0 || !Number.isFinite(max)) return 1;
  const k = Math.max(-1000, Math.min(1000, Math.round(Math.log2(max))));
  return 2 ** -k;
}

interface Scan {
  finite: number;
  mismatched: number;
  maxAbs: number;
  sumAbs: number;
  ssqA: number;
  ssqB: number;
  ssqE: number;
}

/** Both passes over the elements off, off + stride, … (count of them); sums of squares are scaled. */
function scan(a: ArrayLike<number>, b: ArrayLike<number>, off: number, count: number, stride: number): Scan {
  let finite = 0;
  let mismatched = 0;
  let maxAbs = 0;
  let sumAbs = 0;
  let maxMag = 0;
  for (let j = 0, i = off; j < count; j++, i += stride) {
    const x = a[i];
    const y = b[i];
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      if (nonFiniteDiffers(x, y)) mismatched++;
      continue;
    }
    finite++;
    const e = Math.abs(x - y);
    if (e > maxAbs) maxAbs = e;
    sumAbs += e;
    const m = Math.max(Math.abs(x), Math.abs(y));
    if (m > maxMag) maxMag = m;
  }
  const s = scaleFor(maxMag);
  let ssqA = 0;
  let ssqB = 0;
  let ssqE = 0;
  for (let j = 0, i = off; j < count; j++, i += stride) {
    const x = a[i];
    const y = b[i];
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
    const xs = x * s;
    const ys = y * s;
    const es = xs - ys;
    ssqA += xs * xs;
    ssqB += ys * ys;
    ssqE += es * es;
  }
  return { finite, mismatched, maxAbs, sumAbs, ssqA, ssqB, ssqE };
}

function relL2Of(r: Scan): number {
  if (r.mismatched > 0) return Number.POSITIVE_INFINITY;
  if (r.maxAbs === 0) return 0;
  return r.ssqB === 0 ? Number.POSITIVE_INFINITY : Math.sqrt(r.ssqE / r.ssqB);
}

function checkLength(a: ArrayLike<number>, b: ArrayLike<number>, what: string): void {
  if (a.length !== b.length) throw new Error(`${what}: length ${a.length} vs ${b.length}`);
}

/** All metrics of `a` (under test) against `b` (baseline); see the conventions above. */
export function fullMetrics(a: ArrayLike<number>, b: ArrayLike<number>, precision: Precision): FullMetrics {
  checkLength(a, b, 'fullMetrics');
  const n = a.length;
  const r = scan(a, b, 0, n, 1);
  let nanCount = 0;
  let infCount = 0;
  let baselineNonFinite = 0;
  let maxUlp = 0;
  for (let i = 0; i < n; i++) {
    const x = a[i];
    const y = b[i];
    const fx = Number.isFinite(x);
    const fy = Number.isFinite(y);
    if (!fx) {
      if (Number.isNaN(x)) nanCount++;
      else infCount++;
    }
    if (!fy) baselineNonFinite++;
    if (fx && fy && x !== y) {
      const u = ulpDistance(x, y, precision);
      if (u > maxUlp) maxUlp = u;
    }
  }
  const mismatch = r.mismatched > 0;
  const meanAbs = r.finite ? r.sumAbs / r.finite : 0;
  let relL2: number;
  let sqnrDb: number;
  let cosineDistance: number;
  if (mismatch) {
    relL2 = Number.POSITIVE_INFINITY;
    sqnrDb = Number.NEGATIVE_INFINITY;
    cosineDistance = Number.POSITIVE_INFINITY;
  } else {
    relL2 = relL2Of(r);
    sqnrDb =
      r.maxAbs === 0
        ? Number.POSITIVE_INFINITY
        : r.ssqB === 0
          ? Number.NEGATIVE_INFINITY
          : 10 * Math.log10(r.ssqB / r.ssqE);
    const na = Math.sqrt(r.ssqA);
    const nb = Math.sqrt(r.ssqB);
    if (na === 0 || nb === 0) cosineDistance = na === nb ? 0 : 1;
    else {
      const d = na - nb;
      cosineDistance = Math.min(2, Math.max(0, (r.ssqE - d * d) / (2 * na * nb)));
    }
  }
  return {
    n,
    maxAbs: mismatch ? Number.POSITIVE_INFINITY : r.maxAbs,
    meanAbs,
    relL2,
    cosineDistance,
    sqnrDb,
    maxUlp,
    nanCount,
    infCount,
    baselineNonFinite,
    mismatchedNonFinite: r.mismatched,
    nonFiniteMismatch: mismatch,
    finiteCount: r.finite,
  };
}

// ---- per-slice metrics of [T, d] tensors (row-major: token t, channel c at t·d + c) ------------------------

function checkShape(a: ArrayLike<number>, b: ArrayLike<number>, T: number, d: number, what: string): void {
  checkLength(a, b, what);
  if (!Number.isInteger(T) || !Number.isInteger(d) || T < 0 || d < 0 || T * d !== a.length)
    throw new Error(`${what}: [${T}, ${d}] does not fit length ${a.length}`);
}

/** relL2 of each row (token); the non-finite rule applies per row (a mismatch makes that row Infinity). */
export function perTokenRelL2(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  T: number,
  d: number,
): Float64Array {
  checkShape(a, b, T, d, 'perTokenRelL2');
  const out = new Float64Array(T);
  for (let t = 0; t < T; t++) out[t] = relL2Of(scan(a, b, t * d, d, 1));
  return out;
}

/** relL2 of each column (channel); the non-finite rule applies per column. */
export function perChannelRelL2(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  T: number,
  d: number,
): Float64Array {
  checkShape(a, b, T, d, 'perChannelRelL2');
  const out = new Float64Array(d);
  for (let c = 0; c < d; c++) out[c] = relL2Of(scan(a, b, c, T, d));
  return out;
}

/** max |a − b| of each row over both-finite positions; Infinity for a row with a non-finite mismatch. */
export function perTokenMaxAbs(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  T: number,
  d: number,
): Float64Array {
  checkShape(a, b, T, d, 'perTokenMaxAbs');
  const out = new Float64Array(T);
  for (let t = 0; t < T; t++) {
    let m = 0;
    for (let i = t * d; i < (t + 1) * d; i++) {
      const x = a[i];
      const y = b[i];
      if (!Number.isFinite(x) || !Number.isFinite(y)) {
        if (nonFiniteDiffers(x, y)) {
          m = Number.POSITIVE_INFINITY;
          break;
        }
        continue;
      }
      const e = Math.abs(x - y);
      if (e > m) m = e;
    }
    out[t] = m;
  }
  return out;
}

// ---- error histogram ---------------------------------------------------------------------------------------

export interface ErrorHistogram {
  /** bins + 1 edges in log10 |a − b|, evenly spaced from HIST_LOG10_MIN to HIST_LOG10_MAX. */
  edges: number[];
  /** Per bin; errors below the first edge go to the first bin, above the last edge to the last. */
  counts: number[];
  /** Both finite and exactly equal (−0 vs +0 included). */
  zeros: number;
  /** Positions where a or b is non-finite (matching or not). */
  nonFinite: number;
}

export const HIST_LOG10_MIN = -12;
export const HIST_LOG10_MAX = 4;

/**
 * Histogram of log10 |a − b| over the positions where both are finite and differ, on fixed edges (so that
 * histograms of different tensors and precisions line up); out-of-range errors are clamped into the end bins,
 * so sum(counts) = n − zeros − nonFinite.
 */
export function errorHistogram(a: ArrayLike<number>, b: ArrayLike<number>, bins = 40): ErrorHistogram {
  checkLength(a, b, 'errorHistogram');
  if (!Number.isInteger(bins) || bins < 1) throw new Error(`errorHistogram: bins ${bins}`);
  const lo = HIST_LOG10_MIN;
  const hi = HIST_LOG10_MAX;
  const edges = Array.from({ length: bins + 1 }, (_, k) => lo + ((hi - lo) * k) / bins);
  const counts = new Array<number>(bins).fill(0);
  let zeros = 0;
  let nonFinite = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      nonFinite++;
      continue;
    }
    const e = Math.abs(x - y);
    if (e === 0) {
      zeros++;
      continue;
    }
    // e may be Infinity for huge finite doubles of opposite sign: it lands in the last bin.
    const k = Math.floor(((Math.log10(e) - lo) / (hi - lo)) * bins);
    counts[Math.max(0, Math.min(bins - 1, k))]++;
  }
  return { edges, counts, zeros, nonFinite };
}

/**
 * The value of `metric` where larger means worse: the raw metric, except SQNR which becomes the error power
 * ratio 10^(−dB/10) (so a log axis of it is linear in dB, and up = worse). A non-finite mismatch is ∞.
 */
export function metricValue(
  m: FullMetrics,
  metric: 'relL2' | 'maxAbs' | 'meanAbs' | 'cosineDistance' | 'sqnrDb' | 'maxUlp',
): number {
  if (m.nonFiniteMismatch) return Number.POSITIVE_INFINITY;
  if (metric === 'sqnrDb') {
    if (m.sqnrDb === Number.POSITIVE_INFINITY) return 0;
    if (m.sqnrDb === Number.NEGATIVE_INFINITY) return Number.POSITIVE_INFINITY;
    return 10 ** (-m.sqnrDb / 10);
  }
  return m[metric];
}
