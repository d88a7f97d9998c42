// Hand-computed checks of the comparison metrics: magnitudes, zeros, ulps in each storage precision
// (subnormals, across zero, around 1), the non-finite rule, per-slice metrics and the error histogram.
import { describe, expect, it } from 'vitest';
import {
  basicMetrics,
  errorHistogram,
  fullMetrics,
  perChannelRelL2,
  perTokenMaxAbs,
  perTokenRelL2,
  ulpDistance,
} from './metrics';

const INF = Number.POSITIVE_INFINITY;
const NINF = Number.NEGATIVE_INFINITY;
const NAN = Number.NaN;

describe('fullMetrics magnitudes', () => {
  it('matches hand values for [1,2,3] vs [1,2,4]', () => {
    const m = fullMetrics([1, 2, 3], [1, 2, 4], 'fp32');
    expect(m.n).toBe(3);
    expect(m.maxAbs).toBe(1);
    expect(m.meanAbs).toBeCloseTo(1 / 3, 15);
    expect(m.relL2).toBeCloseTo(1 / Math.sqrt(21), 15);
    expect(m.cosineDistance).toBeCloseTo(1 - 17 / (Math.sqrt(14) * Math.sqrt(21)), 15);
    expect(m.sqnrDb).toBeCloseTo(10 * Math.log10(21), 12);
    expect(m.maxUlp).toBe(2 ** 22); // 3 → 4: one binade of 2^23 steps at ulp 2^-22, half of it
    expect(m.finiteCount).toBe(3);
    expect(m.nonFiniteMismatch).toBe(false);
    expect(m.nanCount + m.infCount + m.baselineNonFinite + m.mismatchedNonFinite).toBe(0);
  });

  it('agrees with basicMetrics on finite data', () => {
    const a = [0.5, -1.25, 3e-3, 7];
    const b = [0.5, -1.5, 2e-3, 6.5];
    const f = fullMetrics(a, b, 'fp32');
    const s = basicMetrics(a, b);
    expect(f.maxAbs).toBe(s.maxAbs);
    expect(f.meanAbs).toBeCloseTo(s.meanAbs, 15);
    expect(f.relL2).toBeCloseTo(s.relL2, 15);
  });

  it('identical arrays: relL2 0, SQNR +Inf, ulp 0, cosine 0', () => {
    const a = Float32Array.from([0.1, -2, 3.5, 1e-20]);
    const m = fullMetrics(a, Float32Array.from(a), 'fp32');
    expect(m.maxAbs).toBe(0);
    expect(m.relL2).toBe(0);
    expect(m.sqnrDb).toBe(INF);
    expect(m.maxUlp).toBe(0);
    expect(m.cosineDistance).toBe(0);
  });

  it('is scale-safe: tiny and huge f64 values give the same ratios', () => {
    for (const s of [1, 1e-300, 1e300]) {
      const m = fullMetrics([1 * s, 2 * s, 3 * s], [1 * s, 2 * s, 4 * s], 'fp32');
      expect(m.relL2).toBeCloseTo(1 / Math.sqrt(21), 12);
      expect(m.sqnrDb).toBeCloseTo(10 * Math.log10(21), 10);
      expect(m.cosineDistance).toBeCloseTo(1 - 17 / Math.sqrt(294), 12);
    }
  });

  it('resolves a tiny cosine distance (no 1 − cos cancellation)', () => {
    // a = b + δ·e_perp with b = (1, 0): cos distance = 1 − 1/√(1+δ²) ≈ δ²/2
    const delta = 1e-9;
    const m = fullMetrics([1, delta], [1, 0], 'fp32');
    expect(m.cosineDistance / (delta * delta * 0.5)).toBeCloseTo(1, 6);
  });
});

describe('fullMetrics zeros', () => {
  it('both zero: relL2 0, cosine 0, SQNR +Inf', () => {
    const m = fullMetrics([0, -0, 0], [0, 0, -0], 'fp32');
    expect(m.relL2).toBe(0);
    expect(m.cosineDistance).toBe(0);
    expect(m.sqnrDb).toBe(INF);
    expect(m.maxUlp).toBe(0);
  });

  it('baseline zero, a not: relL2 Infinity, cosine 1, SQNR −Inf', () => {
    const m = fullMetrics([0, 1e-3], [0, 0], 'fp32');
    expect(m.relL2).toBe(INF);
    expect(m.cosineDistance).toBe(1);
    expect(m.sqnrDb).toBe(NINF);
    expect(m.nonFiniteMismatch).toBe(false);
  });

  it('a zero, baseline not: relL2 1, cosine 1, SQNR 0', () => {
    const m = fullMetrics([0, 0], [3, 4], 'fp32');
    expect(m.relL2).toBe(1);
    expect(m.cosineDistance).toBe(1);
    expect(m.sqnrDb).toBe(0);
  });

  it('empty input', () => {
    const m = fullMetrics([], [], 'fp16');
    expect(m).toMatchObject({ n: 0, maxAbs: 0, meanAbs: 0, relL2: 0, cosineDistance: 0, finiteCount: 0 });
  });

  it('throws on a length mismatch', () => {
    expect(() => fullMetrics([1], [1, 2], 'fp32')).toThrow(/length/);
  });
});

describe('ulpDistance', () => {
  const sub = 1e-45; // rounds to the smallest f32 subnormal 2^-149

  it('f32 subnormals and signed zeros', () => {
    expect(ulpDistance(sub, 0, 'fp32')).toBe(1);
    expect(ulpDistance(-sub, sub, 'fp32')).toBe(2);
    expect(ulpDistance(-0, 0, 'fp32')).toBe(0);
    expect(ulpDistance(-sub, 0, 'fp32')).toBe(1);
    expect(ulpDistance(2 ** -126, 2 ** -126 - 2 ** -149, 'fp32')).toBe(1); // largest subnormal → smallest normal
  });

  it('values below f16 resolution round to zero: 0 ulp in fp16', () => {
    expect(ulpDistance(sub, 0, 'fp16')).toBe(0);
    expect(ulpDistance(-sub, sub, 'fp16')).toBe(0);
    expect(ulpDistance(-sub, sub, 'fp16acc')).toBe(0);
    expect(ulpDistance(2 ** -24, -(2 ** -24), 'fp16')).toBe(2); // smallest f16 subnormals across zero
  });

  it('around 1.0', () => {
    const next = 1 + 2 ** -23;
    expect(ulpDistance(1, next, 'fp32')).toBe(1);
    expect(ulpDistance(1, 1 + 2 ** -10, 'fp32')).toBe(2 ** 13);
    expect(ulpDistance(1, 1 + 2 ** -10, 'fp16')).toBe(1);
    expect(ulpDistance(1, 1 + 2 ** -10, 'fp16acc')).toBe(1);
    expect(ulpDistance(1, 1 + 2 ** -7, 'bf16')).toBe(1);
    expect(ulpDistance(1, 1 - 2 ** -24, 'fp32')).toBe(1); // below 1 the ulp halves
    expect(ulpDistance(1, next, 'fp16')).toBe(0); // same f16
    expect(ulpDistance(-1, 1, 'bf16')).toBe(2 * 127 * 128); // 0x3f80 steps on each side of zero
  });

  it('symmetric; NaN and infinities', () => {
    expect(ulpDistance(1 + 2 ** -10, 1, 'fp32')).toBe(2 ** 13);
    expect(ulpDistance(NAN, 1, 'fp32')).toBeNaN();
    expect(ulpDistance(INF, INF, 'fp16')).toBe(0);
    expect(ulpDistance(65504, INF, 'fp16')).toBe(1); // largest finite f16 → inf
    expect(ulpDistance(1e6, 70000, 'fp16')).toBe(0); // both overflow f16
  });

  it('maxUlp in fullMetrics follows the storage precision', () => {
    const a = [1, 2, 1 + 2 ** -10];
    const b = [1, 2, 1];
    expect(fullMetrics(a, b, 'fp32').maxUlp).toBe(2 ** 13);
    expect(fullMetrics(a, b, 'fp16').maxUlp).toBe(1);
    expect(fullMetrics(a, b, 'bf16').maxUlp).toBe(0); // 1 + 2^-10 rounds to 1 in bf16
    expect(fullMetrics([sub], [0], 'fp32').maxUlp).toBe(1);
    expect(fullMetrics([sub], [0], 'fp16').maxUlp).toBe(0);
  });
});

describe('fullMetrics non-finite rule', () => {
  it('NaN in a is counted, not folded: mismatch poisons the headline metrics', () => {
    const m = fullMetrics([1, NAN, 3], [1, 2, 3], 'fp32');
    expect(m.nanCount).toBe(1);
    expect(m.infCount).toBe(0);
    expect(m.baselineNonFinite).toBe(0);
    expect(m.mismatchedNonFinite).toBe(1);
    expect(m.nonFiniteMismatch).toBe(true);
    expect(m.relL2).toBe(INF);
    expect(m.maxAbs).toBe(INF);
    expect(m.cosineDistance).toBe(INF);
    expect(m.sqnrDb).toBe(NINF);
    expect(m.finiteCount).toBe(2);
    expect(m.meanAbs).toBe(0); // the finite part matches
    expect(m.maxUlp).toBe(0);
  });

  it('NaN in both at the same place: counted, not a mismatch, finite metrics over the rest', () => {
    const m = fullMetrics([1, NAN, 3], [1, NAN, 4], 'fp32');
    expect(m.nanCount).toBe(1);
    expect(m.baselineNonFinite).toBe(1);
    expect(m.mismatchedNonFinite).toBe(0);
    expect(m.nonFiniteMismatch).toBe(false);
    expect(m.finiteCount).toBe(2);
    expect(m.maxAbs).toBe(1);
    expect(m.meanAbs).toBe(0.5);
    expect(m.relL2).toBeCloseTo(1 / Math.sqrt(17), 15);
    expect(m.sqnrDb).toBeCloseTo(10 * Math.log10(17), 12);
  });

  it('+Inf vs +Inf is not a mismatch; +Inf vs −Inf and NaN vs Inf are', () => {
    const same = fullMetrics([INF, 1], [INF, 1], 'fp32');
    expect(same.infCount).toBe(1);
    expect(same.baselineNonFinite).toBe(1);
    expect(same.nonFiniteMismatch).toBe(false);
    expect(same.relL2).toBe(0);
    expect(same.sqnrDb).toBe(INF);

    const opp = fullMetrics([INF, 1], [NINF, 1], 'fp32');
    expect(opp.mismatchedNonFinite).toBe(1);
    expect(opp.nonFiniteMismatch).toBe(true);
    expect(opp.relL2).toBe(INF);

    const nanInf = fullMetrics([NAN, 1], [INF, 1], 'fp32');
    expect(nanInf.mismatchedNonFinite).toBe(1);
    expect(nanInf.nanCount).toBe(1);
    expect(nanInf.baselineNonFinite).toBe(1);
  });

  it('non-finite baseline with a finite result is a mismatch', () => {
    const m = fullMetrics([1, 2], [1, INF], 'fp16');
    expect(m.baselineNonFinite).toBe(1);
    expect(m.mismatchedNonFinite).toBe(1);
    expect(m.relL2).toBe(INF);
  });
});

describe('per-slice metrics on a 2×3 tensor', () => {
  // rows are tokens, columns channels
  const a = [1, 2, 3, 4, 5, 6];
  const b = [1, 2, 4, 4, 3, 6];

  it('perTokenRelL2', () => {
    const r = perTokenRelL2(a, b, 2, 3);
    expect(r.length).toBe(2);
    expect(r[0]).toBeCloseTo(1 / Math.sqrt(21), 15); // [1,2,3] vs [1,2,4]
    expect(r[1]).toBeCloseTo(2 / Math.sqrt(61), 15); // [4,5,6] vs [4,3,6]
  });

  it('perChannelRelL2', () => {
    const r = perChannelRelL2(a, b, 2, 3);
    expect(r[0]).toBe(0); // [1,4] vs [1,4]
    expect(r[1]).toBeCloseTo(2 / Math.sqrt(13), 15); // [2,5] vs [2,3]
    expect(r[2]).toBeCloseTo(1 / Math.sqrt(52), 15); // [3,6] vs [4,6]
  });

  it('perTokenMaxAbs', () => {
    expect(Array.from(perTokenMaxAbs(a, b, 2, 3))).toEqual([1, 2]);
  });

  it('applies the non-finite rule per slice', () => {
    const an = [1, 2, 3, NAN, 5, 6];
    const bn = [1, 2, 3, 4, 5, NAN];
    expect(Array.from(perTokenRelL2(an, bn, 2, 3))).toEqual([0, INF]);
    expect(Array.from(perChannelRelL2(an, bn, 2, 3))).toEqual([INF, 0, INF]);
    expect(Array.from(perTokenMaxAbs(an, bn, 2, 3))).toEqual([0, INF]);
    // matched NaN: left out, not a mismatch
    const both = [1, 2, 3, NAN, 5, 7];
    const bothB = [1, 2, 3, NAN, 5, 6];
    expect(perTokenRelL2(both, bothB, 2, 3)[1]).toBeCloseTo(1 / Math.sqrt(61), 15);
    expect(perChannelRelL2(both, bothB, 2, 3)[0]).toBe(0);
    expect(perTokenMaxAbs(both, bothB, 2, 3)[1]).toBe(1);
  });

  it('zero baseline slice: Infinity; both zero: 0', () => {
    expect(Array.from(perTokenRelL2([0, 0, 1, 0], [0, 0, 0, 0], 2, 2))).toEqual([0, INF]);
  });

  it('rejects a shape that does not fit', () => {
    expect(() => perTokenRelL2(a, b, 2, 2)).toThrow(/does not fit/);
  });
});

describe('errorHistogram', () => {
  it('fixed log10 edges from −12 to 4', () => {
    const h = errorHistogram([1], [1]);
    expect(h.edges.length).toBe(41);
    expect(h.edges[0]).toBe(-12);
    expect(h.edges[40]).toBe(4);
    expect(h.edges[1]).toBeCloseTo(-11.6, 12);
    expect(h.counts.length).toBe(40);
  });

  it('bins errors, counts zeros and non-finite apart; counts sum to n − zeros − nonFinite', () => {
    const a = [1, 2, 3, NAN, 5, INF, 1e-20, 1e9, 0, 1 + 1e-6];
    const b = [1, 2.5, 3, NAN, 5, INF, 0, 0, -0, 1];
    const h = errorHistogram(a, b, 16); // one bin per decade
    expect(h.zeros).toBe(4); // 1, 3, 5, 0 vs −0
    expect(h.nonFinite).toBe(2);
    const total = h.counts.reduce((s, c) => s + c, 0);
    expect(total).toBe(a.length - h.zeros - h.nonFinite);
    expect(h.counts[0]).toBe(1); // 1e-20 clamped into the first bin
    expect(h.counts[15]).toBe(1); // 1e9 clamped into the last bin
    expect(h.counts[11]).toBe(1); // 0.5: log10 = −0.30 in [−1, 0)
    expect(h.counts[5]).toBe(1); // 1 + 1e-6 − 1 is a hair under 1e-6: [−7, −6)
  });

  it('random data: counts always sum to n − zeros − nonFinite', () => {
    let s = 12345;
    const rnd = () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
    const a = Array.from({ length: 1000 }, () => rnd());
    const b = a.map((x, i) =>
      i % 7 === 0 ? x : i % 11 === 0 ? NAN : x + rnd() * 10 ** (-8 * Math.abs(rnd())),
    );
    const h = errorHistogram(a, b);
    expect(h.counts.reduce((t, c) => t + c, 0)).toBe(a.length - h.zeros - h.nonFinite);
    expect(h.zeros).toBeGreaterThan(0);
    expect(h.nonFinite).toBeGreaterThan(0);
  });
});
