// Test inputs for the GPU metrics: seeded random tensors with planted special values, f32 or double-float
// baselines, and the f64 view of each baseline that the CPU metrics (the oracle) take.

import { f32FromBits } from '../numeric/bits';
import { mulberry32, randn } from '../numeric/random';
import type { CompareJob, CompareOut, GpuMetrics } from './gpu-metrics';

export interface Case {
  /** Result under test. */
  a: Float32Array;
  /** Baseline: f32 values, or the hi parts of a double-float. */
  hi: Float32Array;
  /** Low parts (double-float baseline) or null (f32 baseline). */
  lo: Float32Array | null;
  /** The baseline as the CPU metrics read it: hi (+ lo) in f64. */
  b64: Float64Array;
}

export type Plant = 'none' | 'agree' | 'mismatch';

export function finishCase(a: Float32Array, hi: Float32Array, lo: Float32Array | null): Case {
  const b64 = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) b64[i] = lo ? hi[i] + lo[i] : hi[i];
  return { a, hi, lo, b64 };
}

/** Interleaved (hi, lo) pairs: the double-float tensor format. */
export function dfPairs(hi: Float32Array, lo: Float32Array): Float32Array {
  const out = new Float32Array(2 * hi.length);
  for (let i = 0; i < hi.length; i++) {
    out[2 * i] = hi[i];
    out[2 * i + 1] = lo[i];
  }
  return out;
}

const NAN = Number.NaN;
const INF = Number.POSITIVE_INFINITY;

/**
 * n random elements: a baseline of scale 10^[-3, 3] (a double-float baseline carries f64 values, split as
 * hi = fround(v), lo = fround(v − hi)), the result a = baseline·(1 + ε·N(0,1)) rounded to f32 with ε one of
 * 1e-7 … 1e-2, a tenth of a exactly equal to the baseline's f32, then planted values:
 * 'agree' — NaN/NaN, +Inf/+Inf, −Inf/−Inf, −0/+0, subnormals, values near the f32 maximum (both signs, so
 * differences and squares leave the f32 range), and for a double-float baseline lo = ±ulp(hi)/2 ties and tiny
 * lo; 'mismatch' — also NaN/finite, finite/Inf, +Inf/−Inf, NaN/Inf.
 */
export function randomCase(rng: () => number, n: number, df: boolean, plant: Plant): Case {
  const scale = 10 ** (rng() * 6 - 3);
  const eps = [1e-7, 1e-5, 1e-4, 1e-2][Math.floor(rng() * 4)];
  const g = randn(rng, n, scale);
  const extra = randn(rng, n, scale * 2 ** -30);
  const noise = randn(rng, n, eps);
  const a = new Float32Array(n);
  const hi = new Float32Array(n);
  const lo = df ? new Float32Array(n) : null;
  for (let i = 0; i < n; i++) {
    const v = df ? g[i] + extra[i] : g[i];
    hi[i] = v;
    if (lo) lo[i] = v - hi[i];
    a[i] = rng() < 0.1 ? hi[i] : v * (1 + noise[i]);
  }
  if (plant !== 'none' && n > 0) {
    const at = () => Math.floor(rng() * n);
    const set = (x: number, h: number, l = 0) => {
      const i = at();
      a[i] = x;
      hi[i] = h;
      if (lo) lo[i] = l;
    };
    set(NAN, NAN);
    set(INF, INF);
    set(-INF, -INF);
    set(-0, 0);
    set(0, -0);
    set(f32FromBits(0x00000123), -f32FromBits(0x00400001)); // subnormals
    set(f32FromBits(0x00000001), 0);
    set(3.3e38, -3.3e38); // |a − b| ≈ 6.6e38 > f32 max
    set(-3.4e38, -3.39e38);
    if (lo) {
      set(1, 1, 2 ** -24); // hi + lo is a tie in f32 (to even: 1)
      set(1 + 2 ** -23, 1, 2 ** -24);
      set(1, 1, -(2 ** -25)); // below a power of two the f32 tie is at ulp/4
      set(1, 1, 2 ** -53); // the f64 sum 1 + 2^-53 is a tie (to even: 1): |a − b| is 0 in f64
      set(1, 1, -(2 ** -54)); // 1 − 2^-54: f64 tie below a power of two (to even: 1)
      set(1, 1, -3 * 2 ** -55); // below 1 the f64 spacing is 2^-53: the sum rounds to 1 − 2^-53, not 1
      set(3, 3, 3 * 2 ** -60);
      set(-5, -5, 2 ** -80);
      set(0.75, 0, 0.75); // (0, lo)
      set(2, 1.5, 2 ** -30);
    }
    if (plant === 'mismatch') {
      set(NAN, 1.5);
      set(2.5, INF);
      set(INF, -INF);
      set(NAN, -INF);
      if (lo) set(1, INF, -INF); // hi + lo is NaN
    }
  }
  return finishCase(a, hi, lo);
}

/** Uniform u32 words. */
export function randomWords(seed: number, n: number): Uint32Array {
  const rng = mulberry32(seed);
  return Uint32Array.from({ length: n }, () => (rng() * 2 ** 32) >>> 0);
}

/**
 * The FullMetrics fields the GPU gives bit for bit, as the CPU's (counts and maxima; `n`, the sums and
 * nonFiniteMismatch are checked beside them where a check asks for them).
 */
export const EXACT_FIELDS = [
  'nanCount',
  'infCount',
  'baselineNonFinite',
  'mismatchedNonFinite',
  'finiteCount',
  'maxUlp',
  'maxAbs',
] as const;

/** `jobs` recorded in one encoder, submitted and read back: each job's CompareOut (the readback released after). */
export async function reduceJobs(
  device: GPUDevice,
  gm: GpuMetrics,
  jobs: CompareJob[],
): Promise<CompareOut[]> {
  const enc = device.createCommandEncoder();
  const pending = gm.record(enc, jobs);
  device.queue.submit([enc.finish()]);
  try {
    return (await pending.read()).compare;
  } finally {
    pending.release();
  }
}
