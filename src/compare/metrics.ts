// Error metrics between a result and a reference. NaN/Inf are counted, never folded into a number.

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
