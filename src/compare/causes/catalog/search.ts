// Small helpers the causes share: a parameter found by a search over a log-scaled range, and numbers in words.
import type { SearchContext, Variant } from '../types';

/** The x in [lo, hi] (log-scaled) whose variant leaves the least residual: a grid, then golden-section refinement. */
export function searchLog(
  s: SearchContext,
  make: (x: number) => Variant,
  lo: number,
  hi: number,
  steps = 24,
  extra: number[] = [],
): number {
  const f = (lx: number) => s.residual(make(Math.exp(lx)));
  const a = Math.log(lo);
  const b = Math.log(hi);
  let bestX = a;
  let bestR = Number.POSITIVE_INFINITY;
  for (let i = 0; i <= steps; i++) {
    const x = a + ((b - a) * i) / steps;
    const r = f(x);
    if (r < bestR) [bestX, bestR] = [x, r];
  }
  for (const e of extra) {
    const r = f(Math.log(e));
    if (r < bestR) [bestX, bestR] = [Math.log(e), r];
  }
  // Golden section on the grid cell either side of the best point.
  const g = (Math.sqrt(5) - 1) / 2;
  let l = bestX - (b - a) / steps;
  let h = bestX + (b - a) / steps;
  let x1 = h - g * (h - l);
  let x2 = l + g * (h - l);
  let f1 = f(x1);
  let f2 = f(x2);
  for (let i = 0; i < 20; i++) {
    if (f1 < f2) {
      h = x2;
      [x2, f2] = [x1, f1];
      x1 = h - g * (h - l);
      f1 = f(x1);
    } else {
      l = x1;
      [x1, f1] = [x2, f2];
      x2 = l + g * (h - l);
      f2 = f(x2);
    }
  }
  const refined = f1 < f2 ? x1 : x2;
  const x = Math.min(f1, f2) < bestR ? refined : bestX;
  // A round value that explains as well is the likelier one (1e-3, not 1.0004e-3).
  const round = Number(Math.exp(x).toPrecision(1));
  return s.residual(make(round)) <= Math.max(1.1 * Math.min(f1, f2, bestR), Math.min(f1, f2, bestR) + 0.5)
    ? round
    : Math.exp(x);
}

/** A number in words: 2 significant digits, exponent form when small or large. */
export function num(x: number): string {
  if (x === 0) return '0';
  const a = Math.abs(x);
  if (a >= 1e-2 && a < 1e5) return String(Number(x.toPrecision(2)));
  return x.toExponential(1).replace('e-', 'e-').replace('e+', 'e');
}

/** The median of the finite values (NaN when there are none). */
export function median(xs: number[]): number {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}
