// Pure helpers behind the charts: which value of a FullMetrics is plotted (larger = worse, so "up" always
// means "more error"), log-scale domains that survive zeros and infinities, and the per-layer rows of the
// error curve. Unit-tested; the React/d3 components only draw what these return.
import type { Report } from '../../compare/analyze';
import { metricValue } from '../../compare/metrics';
import type { Metric } from '../../run/runspec';

/** The plotted value of a metric (larger = worse): the same rule as the analysis (metrics.ts metricValue). */
export const errorValue = metricValue;

/** Back from errorValue to the metric's own unit (dB for SQNR) for labels. */
export function fromErrorValue(v: number, metric: Metric): number {
  if (metric !== 'sqnrDb') return v;
  if (v === 0) return Number.POSITIVE_INFINITY;
  if (v === Number.POSITIVE_INFINITY) return Number.NEGATIVE_INFINITY;
  return -10 * Math.log10(v);
}

/** 10^e exactly as the literal 1e<e> (10 ** e can be one ulp off). */
export function decade(e: number): number {
  return Number(`1e${e}`);
}

/**
 * A log domain [lo, hi] covering the positive finite values, padded to whole decades, at least one decade
 * wide; [1e-12, 1] when there are none. Zeros and ∞ are drawn at the ends (see clampToDomain).
 */
export function logDomain(
  values: readonly number[],
  fallback: [number, number] = [1e-12, 1],
): [number, number] {
  let lo = Number.POSITIVE_INFINITY;
  let hi = 0;
  for (const v of values) {
    if (Number.isFinite(v) && v > 0) {
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
  }
  if (hi === 0) return fallback;
  let ea = Math.floor(Math.log10(lo));
  let eb = Math.ceil(Math.log10(hi));
  // log10 can round across a decade boundary; widen by one decade then.
  if (decade(ea) > lo) ea--;
  if (decade(eb) < hi) eb++;
  if (eb <= ea) eb = ea + 1;
  return [decade(ea), decade(eb)];
}

export type Placed = { y: number; kind: 'value' | 'zero' | 'infinite' } | null;

/** Where a value goes on a log axis of `domain`: 0 at the bottom, ∞ at the top, NaN nowhere. */
export function clampToDomain(v: number, domain: [number, number]): Placed {
  if (Number.isNaN(v)) return null;
  if (v <= 0) return { y: domain[0], kind: 'zero' };
  if (v === Number.POSITIVE_INFINITY) return { y: domain[1], kind: 'infinite' };
  return { y: Math.min(domain[1], Math.max(domain[0], v)), kind: 'value' };
}

export interface CurveRow {
  layer: number;
  propagated: number;
  local: number;
  floor: number;
  localFloor: number;
  /** k × the floor the verdict used (see thresholdOf). */
  threshold: number;
  ratio: number;
  localRatio: number;
  diverged: boolean;
  born: boolean;
}

/**
 * The divergence threshold of one layer in errorValue units. For the report's own metric it is recovered
 * from the ratio analyze() computed (propagated / ratio is the floor it divided by, which includes its
 * minimum-floor clamp), so the line and the `diverged` flags agree. For another metric: k × the raw floor.
 */
export function thresholdOf(
  propagated: number,
  floor: number,
  ratio: number,
  k: number,
  sameMetric: boolean,
): number {
  if (sameMetric && Number.isFinite(propagated) && propagated > 0 && Number.isFinite(ratio) && ratio > 0)
    return k * (propagated / ratio);
  return k * floor;
}

export function curveRows(report: Report, metric: Metric): CurveRow[] {
  const same = metric === report.metric;
  return report.layers.map((l) => {
    const propagated = errorValue(l.propagated, metric);
    const floor = errorValue(l.floor, metric);
    return {
      layer: l.layer,
      propagated,
      local: errorValue(l.local, metric),
      floor,
      localFloor: errorValue(l.localFloor, metric),
      threshold: thresholdOf(propagated, floor, l.ratio, report.k, same),
      ratio: l.ratio,
      localRatio: l.localRatio,
      diverged: l.diverged,
      born: l.born,
    };
  });
}

/** Tick labels of an errorValue log axis: 1e-6 style, or dB for SQNR. */
export function axisTick(v: number, metric: Metric): string {
  if (metric === 'sqnrDb') return `${Math.round(fromErrorValue(v, metric))} dB`;
  const e = Math.log10(v);
  if (Math.abs(e - Math.round(e)) < 1e-9) return `1e${Math.round(e)}`;
  return v.toExponential(0);
}

/** Decade ticks inside a log domain, thinned to at most `max`. */
export function decadeTicks(domain: [number, number], max = 8): number[] {
  const a = Math.round(Math.log10(domain[0]));
  const b = Math.round(Math.log10(domain[1]));
  const n = b - a + 1;
  const step = Math.max(1, Math.ceil(n / max));
  const out: number[] = [];
  for (let e = a; e <= b; e += step) out.push(decade(e));
  return out;
}

export interface HeatCell {
  layer: number;
  token: number;
  value: number;
}

/** Layer × token cells of the per-token error (relative L2 of the propagated error per token). */
export function heatCells(report: Report): HeatCell[] {
  const out: HeatCell[] = [];
  for (const l of report.layers) {
    l.perToken.forEach((value, token) => {
      out.push({ layer: l.layer, token, value });
    });
  }
  return out;
}

export interface HistBar {
  x0: number;
  x1: number;
  count: number;
}

/** Histogram bars (log10 |Δ| bin edges), with the empty ends trimmed to the occupied range ± one bin. */
export function histBars(h: { edges: number[]; counts: number[] }): HistBar[] {
  const bars = h.counts.map((count, i) => ({ x0: h.edges[i], x1: h.edges[i + 1], count }));
  const first = bars.findIndex((b) => b.count > 0);
  if (first < 0) return [];
  let last = bars.length - 1;
  while (last > first && bars[last].count === 0) last--;
  return bars.slice(Math.max(0, first - 1), Math.min(bars.length, last + 2));
}

/** The number of pixels a chart may use, from its container width (never below a usable minimum). */
export function chartWidth(containerWidth: number, min = 280, max = 2400): number {
  if (!Number.isFinite(containerWidth) || containerWidth <= 0) return min;
  return Math.max(min, Math.min(max, Math.floor(containerWidth)));
}

/**
 * Whole-decade ticks (as log10 exponents) over a histogram's [lo, hi] exponent range, thinned to at most
 * `max`: one label per decade, never "1e-8, 1e-8" from rounding fractional ticks.
 */
export function exponentTicks(lo: number, hi: number, max = 8): number[] {
  const a = Math.ceil(lo - 1e-9);
  const b = Math.floor(hi + 1e-9);
  if (b < a) return [];
  const step = Math.max(1, Math.ceil((b - a + 1) / Math.max(1, max)));
  const out: number[] = [];
  for (let e = a; e <= b; e += step) out.push(e);
  return out;
}

/** 10^e in short words: "1e-7" for whole decades, else two significant digits ("2.5e-8"). */
export function powerWords(e: number): string {
  if (Math.abs(e - Math.round(e)) < 1e-9) return `1e${Math.round(e)}`;
  return (10 ** e).toExponential(1).replace('e+', 'e');
}

/** A histogram bin's range in words: "2.5e-8 to 6.3e-8". */
export function binWords(x0: number, x1: number): string {
  return `${powerWords(x0)} to ${powerWords(x1)}`;
}
