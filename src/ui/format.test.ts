import { describe, expect, it } from 'vitest';
import {
  fileSafe,
  formatBytes,
  formatMetric,
  formatMs,
  formatNs,
  formatRatio,
  formatSci,
  nsTickFormat,
  ordinal,
} from './format';

describe('format', () => {
  it("an axis's nanosecond ticks share the unit of its largest value", () => {
    const ms = nsTickFormat(1e8);
    expect([0, 5e7, 1e8].map(ms)).toEqual(['0 ms', '50 ms', '100 ms']);
    const us = nsTickFormat(2500);
    expect([0, 1250, 2500].map(us)).toEqual(['0 µs', '1.25 µs', '2.5 µs']);
    expect(nsTickFormat(800)(0)).toBe('0 ns');
    expect(nsTickFormat(3e9)(1.5e9)).toBe('1.5 s');
  });

  it('ordinals', () => {
    expect([1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111].map(ordinal)).toEqual([
      '1st',
      '2nd',
      '3rd',
      '4th',
      '11th',
      '12th',
      '13th',
      '21st',
      '22nd',
      '23rd',
      '101st',
      '111th',
    ]);
  });

  it('bytes', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1 KiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(12.6 * 1024 * 1024)).toBe('12.6 MiB');
  });

  it('metric values, with ∞, NaN and exact zero spelled out', () => {
    expect(formatSci(3.0097e-1)).toBe('3.01e-1');
    expect(formatSci(0)).toBe('0');
    expect(formatSci(Number.POSITIVE_INFINITY)).toBe('∞');
    expect(formatSci(Number.NaN)).toBe('NaN');
    expect(formatMetric(126.918, 'sqnrDb')).toBe('126.9 dB');
    expect(formatMetric(Number.POSITIVE_INFINITY, 'sqnrDb')).toBe('∞ dB (exact)');
    expect(formatMetric(2182, 'maxUlp')).toBe('2182');
    expect(formatMetric(4.5e-7, 'relL2')).toBe('4.50e-7');
  });

  it('ratios', () => {
    expect(formatRatio(0.2407)).toBe('×0.241');
    expect(formatRatio(400619.1)).toBe('×4.01e+5');
    expect(formatRatio(0)).toBe('×0');
    expect(formatRatio(Number.POSITIVE_INFINITY)).toBe('×∞');
  });

  it('times', () => {
    expect(formatNs(850)).toBe('850 ns');
    expect(formatNs(12_345)).toBe('12.3 µs');
    expect(formatNs(4_560_000)).toBe('4.56 ms');
    expect(formatNs(1_234_000_000)).toBe('1.23 s');
    expect(formatMs(850)).toBe('850 ms');
    expect(formatMs(36_812)).toBe('36.8 s');
    expect(formatMs(125_000)).toBe('2 min 5 s');
  });

  it('file-safe names', () => {
    expect(fileSafe('neox-kjv-bytes')).toBe('neox-kjv-bytes');
    expect(fileSafe('../a b/<c>')).toBe('..-a-b-c');
    expect(fileSafe('///')).toBe('x');
  });
});
