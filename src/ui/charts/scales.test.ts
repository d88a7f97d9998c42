import { describe, expect, it } from 'vitest';
import { fixtureReport, metrics } from '../report-fixture';
import {
  axisTick,
  binWords,
  chartWidth,
  clampToDomain,
  curveRows,
  decadeTicks,
  errorValue,
  exponentTicks,
  fromErrorValue,
  heatCells,
  histBars,
  logDomain,
  powerWords,
  thresholdOf,
} from './scales';

describe('errorValue', () => {
  it('is the raw metric, except SQNR which becomes an error power (larger = worse)', () => {
    const m = metrics(1e-3);
    expect(errorValue(m, 'relL2')).toBe(1e-3);
    expect(errorValue(m, 'maxAbs')).toBe(4e-3);
    expect(errorValue(m, 'sqnrDb')).toBeCloseTo(1e-6, 12);
    expect(fromErrorValue(errorValue(m, 'sqnrDb'), 'sqnrDb')).toBeCloseTo(60, 9);
    expect(errorValue(metrics(0), 'sqnrDb')).toBe(0);
    expect(fromErrorValue(0, 'sqnrDb')).toBe(Number.POSITIVE_INFINITY);
    expect(fromErrorValue(0.5, 'relL2')).toBe(0.5);
  });

  it('a non-finite mismatch is infinitely bad in every metric', () => {
    const m = metrics(1e-3, { nonFiniteMismatch: true, sqnrDb: Number.NEGATIVE_INFINITY });
    for (const k of ['relL2', 'maxAbs', 'meanAbs', 'cosineDistance', 'sqnrDb', 'maxUlp'] as const)
      expect(errorValue(m, k)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('log domains', () => {
  it('cover the positive finite values in whole decades', () => {
    expect(logDomain([3e-7, 0.25])).toEqual([1e-7, 1]);
    const [a, b] = logDomain([1e-3]);
    expect(a).toBeLessThanOrEqual(1e-3);
    expect(b).toBeGreaterThan(1e-3);
    expect(b / a).toBeGreaterThanOrEqual(10);
  });

  it('ignore zeros, infinities and NaN, with a fallback when nothing is left', () => {
    expect(logDomain([0, Number.POSITIVE_INFINITY, Number.NaN, 5e-5])).toEqual([1e-5, 1e-4]);
    expect(logDomain([0, 0])).toEqual([1e-12, 1]);
    expect(logDomain([], [1, 10])).toEqual([1, 10]);
  });

  it('place zeros at the bottom and infinity at the top', () => {
    const d: [number, number] = [1e-8, 1];
    expect(clampToDomain(0, d)).toEqual({ y: 1e-8, kind: 'zero' });
    expect(clampToDomain(Number.POSITIVE_INFINITY, d)).toEqual({ y: 1, kind: 'infinite' });
    expect(clampToDomain(1e-3, d)).toEqual({ y: 1e-3, kind: 'value' });
    expect(clampToDomain(1e3, d)).toEqual({ y: 1, kind: 'value' });
    expect(clampToDomain(Number.NaN, d)).toBeNull();
  });

  it('tick at decades, thinned, labelled 1eN or in dB', () => {
    expect(decadeTicks([1e-8, 1])).toHaveLength(5);
    expect(decadeTicks([1e-3, 1])).toEqual([1e-3, 1e-2, 1e-1, 1]);
    expect(axisTick(1e-6, 'relL2')).toBe('1e-6');
    expect(axisTick(1e-6, 'sqnrDb')).toBe('60 dB');
  });
});

describe('curve rows', () => {
  it('one row per layer; the threshold agrees with the diverged flags for the verdict metric', () => {
    const r = fixtureReport();
    const rows = curveRows(r, 'relL2');
    expect(rows.map((x) => x.layer)).toEqual([0, 1]);
    expect(rows[1].propagated).toBe(0.3);
    // threshold recovered from the ratio: k × (propagated / ratio) = 10 × 2e-7
    expect(rows[1].threshold).toBeCloseTo(2e-6, 15);
    expect(rows[1].propagated > rows[1].threshold).toBe(r.layers[1].diverged);
    // layer 0: propagated 0 (ratio 0) -> k × the raw floor
    expect(rows[0].threshold).toBeCloseTo(1e-6, 15);
    expect(rows[1].local).toBe(Number.POSITIVE_INFINITY);
  });

  it('another metric uses k × its own floor', () => {
    expect(thresholdOf(0.3, 2e-7, 1.5e6, 10, false)).toBeCloseTo(2e-6, 15);
    expect(thresholdOf(0.3, 4e-7, 1e5, 10, true)).toBeCloseTo(3e-5, 15);
    const rows = curveRows(fixtureReport(), 'maxAbs');
    expect(rows[1].threshold).toBeCloseTo(10 * 8e-7, 15);
  });
});

describe('heatmap and histogram data', () => {
  it('heat cells are layers × tokens', () => {
    const cells = heatCells(fixtureReport());
    expect(cells).toHaveLength(6);
    expect(cells[5]).toEqual({ layer: 1, token: 2, value: Number.POSITIVE_INFINITY });
  });

  it('histogram bars keep the occupied bins plus one on each side', () => {
    const h = fixtureReport().taps[0].histogram!;
    const bars = histBars(h);
    expect(bars.map((b) => b.count)).toEqual([0, 3, 5, 0]);
    expect(bars[1].x0).toBeCloseTo(h.edges[12], 12);
    expect(histBars({ edges: [0, 1, 2], counts: [0, 0] })).toEqual([]);
    expect(histBars({ edges: [0, 1], counts: [7] })).toEqual([{ x0: 0, x1: 1, count: 7 }]);
  });

  it('chart width follows the container within bounds', () => {
    expect(chartWidth(0)).toBe(280);
    expect(chartWidth(640.7)).toBe(640);
    expect(chartWidth(5000)).toBe(2400); // a projector’s full width, no more
    expect(chartWidth(Number.NaN)).toBe(280);
  });
});

describe('histogram axis words', () => {
  it('one tick per whole decade, none repeated, thinned to the room there is', () => {
    expect(exponentTicks(-8.4, -6.2)).toEqual([-8, -7]);
    expect(exponentTicks(-8, -6)).toEqual([-8, -7, -6]);
    expect(exponentTicks(-7.6, -7.2)).toEqual([]);
    const many = exponentTicks(-30, 0, 5);
    expect(many.length).toBeLessThanOrEqual(5);
    expect(new Set(many).size).toBe(many.length);
  });
  it('bins in plain numbers, not fractional exponents', () => {
    expect(powerWords(-7)).toBe('1e-7');
    expect(powerWords(-7.6)).toBe('2.5e-8');
    expect(binWords(-7.6, -7.2)).toBe('2.5e-8 to 6.3e-8');
  });
});
