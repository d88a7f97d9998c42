// How an error is judged against the noise floor: the floor in the chosen metric (never below one rounding of
// the storage precision), the ratio to it, and the rule that NaN/Inf is a finding, never agreement.
import { type Precision, storageUnitRoundoff } from '../numeric/precision';
import type { Metric } from '../run/runspec';
import { type FullMetrics, metricValue } from './metrics';

/**
 * The smallest floor a ratio is taken against, so a layer whose reference happens to be exact (an embedding
 * gather, T = 1) is not declared divergent for one rounding: one unit roundoff of the storage precision in
 * relative terms (squared for the power-like metrics), one ulp, or u × the baseline's magnitude.
 */
export function minFloor(metric: Metric, precision: Precision, scale: number): number {
  const u = storageUnitRoundoff(precision);
  switch (metric) {
    case 'relL2':
      return u;
    case 'cosineDistance':
    case 'sqnrDb':
      return u * u;
    case 'maxUlp':
      return 1;
    default:
      return u * scale;
  }
}

export function effectiveFloor(
  floor: FullMetrics,
  metric: Metric,
  precision: Precision,
  scale: number,
): number {
  return Math.max(metricValue(floor, metric), minFloor(metric, precision, scale));
}

export function ratioOf(
  err: FullMetrics,
  floor: FullMetrics,
  metric: Metric,
  precision: Precision,
  scale: number,
): number {
  return metricValue(err, metric) / effectiveFloor(floor, metric, precision, scale);
}

/** NaN/±Inf count in either operand of a comparison (a: the compared path, b: its baseline). */
export function nonFiniteIn(m: FullMetrics): number {
  return m.nanCount + m.infCount + m.baselineNonFinite;
}

/** Whether the metric's floor depends on the baseline's magnitude (then the scale must be measured). */
export function needsScale(metric: Metric): boolean {
  return metric === 'maxAbs' || metric === 'meanAbs';
}
