import { describe, expect, it } from 'vitest';
import { mulberry32, randn } from '../../numeric/random';
import { largestHolding } from './largest';

/** The definition: every square sorted ascending, summed from the largest until the share is reached. */
function sorted(a: ArrayLike<number>, share: number) {
  const sq = Float64Array.from(a, (x) => (Number.isFinite(x) ? x * x : 0)).sort();
  let total = 0;
  for (const x of sq) total += x;
  let acc = 0;
  let k = 0;
  for (let i = sq.length - 1; i >= 0 && acc < share * total; i--, k++) acc += sq[i];
  return { count: k, threshold: sq[Math.max(0, sq.length - Math.max(1, k))] };
}

describe('largestHolding', () => {
  it('gives the sorted definition on errors of every shape (50 seeds)', () => {
    const base = (Date.now() ^ 0x5bd1e995) >>> 0;
    for (let s = 0; s < 50; s++) {
      const seed = base + s;
      const rng = mulberry32(seed);
      const n = 1 + Math.floor(rng() * 5000);
      const a = randn(rng, n, 10 ** (rng() * 8 - 4));
      // Mixes: a few huge elements, exact zeros, ties (the same value many times), non-finite elements.
      const kind = s % 5;
      for (let i = 0; i < n; i++) {
        const u = rng();
        if (kind === 1 && u < 0.01) a[i] *= 1e6;
        if (kind === 2 && u < 0.5) a[i] = 0;
        if (kind === 3) a[i] = u < 0.5 ? 0.25 : -0.25;
        if (kind === 4 && u < 0.02) a[i] = u < 0.01 ? Number.NaN : Number.POSITIVE_INFINITY;
      }
      for (const share of [0.9, 0.5, 0.99]) {
        const got = largestHolding(a, share);
        const want = sorted(a, share);
        // Sums in another order may differ in their last bits: the count by at most one at an exact boundary.
        expect(Math.abs(got.count - want.count), `seed ${seed} n ${n} share ${share}`).toBeLessThanOrEqual(1);
        if (got.count === want.count) expect(got.threshold, `seed ${seed}`).toBe(want.threshold);
      }
    }
  });

  it('counts none of an all-zero tensor and its threshold is zero', () => {
    expect(largestHolding(new Float64Array(7), 0.9)).toEqual({ count: 0, threshold: 0 });
  });

  it('finds the one element that holds it all', () => {
    const a = new Float64Array(1000);
    a[613] = -3;
    expect(largestHolding(a, 0.9)).toEqual({ count: 1, threshold: 9 });
  });
});
