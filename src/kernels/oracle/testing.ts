// Test helpers for the oracle's df kernels: random df inputs (whose hi + lo is exactly the double the CPU
// oracle gets), NaN-poisoned df outputs, readback as f64, and an elementwise check that fails on NaN/Inf.
import { expect } from 'vitest';
import { fromDfPairs } from '../../numeric/double-float';
import { randn } from '../../numeric/random';
import type { Harness } from '../testing';

export { relL2 } from '../../numeric/double-float';

export interface DfInput {
  /** Interleaved (hi, lo) pairs to upload. */
  pairs: Float32Array;
  /** hi + lo as doubles: what the CPU oracle gets. */
  values: Float64Array;
}

/** n random values ~ N(0, std²) that use the lo part too: hi = an f32 sample, lo = hi · U(−2^-26, 2^-26). */
export function randDf(rng: () => number, n: number, std = 1): DfInput {
  const hi = randn(rng, n, std);
  const pairs = new Float32Array(2 * n);
  const values = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const lo = Math.fround(hi[i] * 2 ** -26 * (2 * rng() - 1)); // |lo| < ulp(hi) / 4: a normalised pair
    pairs[2 * i] = hi[i];
    pairs[2 * i + 1] = lo;
    values[i] = hi[i] + lo; // exact in f64
  }
  return { pairs, values };
}

/** A df buffer of n elements filled with NaN. */
export function poisonedDf(h: Harness, n: number): GPUBuffer {
  return h.poisoned(2 * n);
}

export async function readDfH(h: Harness, buf: GPUBuffer, n: number): Promise<Float64Array> {
  return fromDfPairs(await h.read(buf, 2 * n), n);
}

/**
 * Elementwise |got − ref| <= tol(i); NaN/Inf in `got` fail. Prints the seed, the worst err/tol and the first
 * few mismatches.
 */
export function checkDf(
  what: string,
  got: Float64Array,
  ref: ArrayLike<number>,
  tol: (i: number) => number,
  seed: number,
): number {
  let bad = 0;
  let worst = 0;
  const lines: string[] = [];
  for (let i = 0; i < ref.length; i++) {
    const err = Math.abs(got[i] - ref[i]);
    const t = tol(i);
    const ratio = Number.isFinite(got[i])
      ? t > 0
        ? err / t
        : err === 0
          ? 0
          : Number.POSITIVE_INFINITY
      : Number.POSITIVE_INFINITY;
    worst = Math.max(worst, Number.isNaN(ratio) ? Number.POSITIVE_INFINITY : ratio);
    if (!(ratio <= 1)) {
      if (bad < 8)
        lines.push(
          `  [${i}] got ${got[i]} ref ${ref[i]} |err| ${err.toExponential(3)} tol ${t.toExponential(3)}`,
        );
      bad++;
    }
  }
  const head = `${what} (seed ${seed}): ${bad} of ${ref.length} outside tolerance, worst err/tol ${worst.toExponential(3)}`;
  expect(bad, [head, ...lines].join('\n')).toBe(0);
  return worst;
}
