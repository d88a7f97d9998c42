// Number and label formatting shared by the panels and the charts. Pure functions (unit-tested).
import type { Metric } from '../run/runspec';

/** Bytes as B / KiB / MiB / GiB with at most one decimal. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 || Number.isInteger(v) ? v : v.toFixed(1)} ${units[u]}`;
}

export function formatCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} k`;
  return String(n);
}

export const METRIC_LABELS: Record<Metric, string> = {
  relL2: 'relative L2',
  maxAbs: 'max |Δ|',
  meanAbs: 'mean |Δ|',
  cosineDistance: 'cosine distance',
  sqnrDb: 'SQNR (dB)',
  maxUlp: 'max ULP distance',
};

export const METRIC_HELP: Record<Metric, string> = {
  relL2: '‖fused − reference‖ / ‖reference‖',
  maxAbs: 'largest absolute difference of one element',
  meanAbs: 'mean absolute difference over the elements',
  cosineDistance: '1 − cos(angle between fused and reference)',
  sqnrDb: 'signal-to-error power ratio in dB (higher is better)',
  maxUlp: 'largest distance in units in the last place of the storage precision',
};

/** A float in scientific notation with 3 significant digits; ∞ and NaN spelled out; exact 0 as "0". */
export function formatSci(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '∞';
  if (v === Number.NEGATIVE_INFINITY) return '−∞';
  if (v === 0) return '0';
  return v.toExponential(2);
}

/** A metric's raw value (as FullMetrics holds it) for people. */
export function formatMetric(v: number, metric: Metric): string {
  if (metric === 'sqnrDb') {
    if (v === Number.POSITIVE_INFINITY) return '∞ dB (exact)';
    if (v === Number.NEGATIVE_INFINITY) return '−∞ dB';
    if (Number.isNaN(v)) return 'NaN';
    return `${v.toFixed(1)} dB`;
  }
  if (metric === 'maxUlp') {
    if (!Number.isFinite(v)) return formatSci(v);
    return v >= 1e6 ? v.toExponential(2) : String(Math.round(v));
  }
  return formatSci(v);
}

/** propagated / floor ratios: "×0.24", "×12.3", "×4.01e+5". */
export function formatRatio(r: number): string {
  if (!Number.isFinite(r)) return `×${formatSci(r)}`;
  if (r === 0) return '×0';
  if (r >= 1000 || r < 0.01) return `×${r.toExponential(2)}`;
  return `×${r.toPrecision(3)}`;
}

/** GPU time from nanoseconds: "850 ns", "12.3 µs", "4.56 ms", "1.23 s". */
export function formatNs(ns: number): string {
  if (!Number.isFinite(ns)) return '—';
  const a = Math.abs(ns);
  if (a < 1e3) return `${Math.round(ns)} ns`;
  if (a < 1e6) return `${(ns / 1e3).toPrecision(3)} µs`;
  if (a < 1e9) return `${(ns / 1e6).toPrecision(3)} ms`;
  return `${(ns / 1e9).toPrecision(3)} s`;
}

/**
 * An axis's tick labels of nanoseconds, all in the unit of the axis's largest value (0 as "0 ms" beside
 * "100 ms", never "0 ns").
 */
export function nsTickFormat(max: number): (ns: number) => string {
  const a = Math.abs(max);
  const [div, unit] = a < 1e3 ? [1, 'ns'] : a < 1e6 ? [1e3, 'µs'] : a < 1e9 ? [1e6, 'ms'] : [1e9, 's'];
  return (ns) => (Number.isFinite(ns) ? `${Number((ns / div).toPrecision(3))} ${unit}` : '—');
}

/** Wall time from milliseconds: "850 ms", "12.3 s", "2 min 5 s". */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toPrecision(3)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms - m * 60_000) / 1000)} s`;
}

/** A safe file name fragment: letters, digits, dot, dash, underscore. */
export function fileSafe(s: string): string {
  const out = s.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '');
  return out.slice(0, 60) || 'x';
}

/** 1 → "1st", 2 → "2nd", 11 → "11th", 23 → "23rd". */
export function ordinal(n: number): string {
  const tens = n % 100;
  const suffix =
    tens >= 11 && tens <= 13 ? 'th' : n % 10 === 1 ? 'st' : n % 10 === 2 ? 'nd' : n % 10 === 3 ? 'rd' : 'th';
  return `${n}${suffix}`;
}
