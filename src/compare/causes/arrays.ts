// Array helpers of the cause search: columns of a [T, width] tensor, and elementwise maps in plain loops
// (Float64Array.from with a callback is several times slower on the sizes an op's output has).
import { type NumFormat, roundTo } from '../../numeric/round';

/** The tensor's columns `cols` of every row ([T, cols.length]). */
export function gather(
  a: ArrayLike<number>,
  T: number,
  width: number,
  cols: Int32Array | null,
): Float64Array {
  if (!cols) return Float64Array.from(a);
  const out = new Float64Array(T * cols.length);
  for (let t = 0; t < T; t++)
    for (let j = 0; j < cols.length; j++) out[t * cols.length + j] = a[t * width + cols[j]];
  return out;
}

/** f of every value (a loop, as round's). */
export function mapAll(a: ArrayLike<number>, f: (x: number) => number): Float64Array {
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = f(a[i]);
  return out;
}

/** The values rounded to the format (a loop: Float64Array.from with a callback is several times slower). */
export function round(f: NumFormat | undefined, a: ArrayLike<number>): ArrayLike<number> {
  if (!f) return a;
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = roundTo(f, a[i]);
  return out;
}

/** The median of the finite values (NaN when none): a typed sort, no comparator. */
export function medianOf(a: Float64Array): number {
  let m = 0;
  const v = new Float64Array(a.length);
  for (const x of a) if (Number.isFinite(x)) v[m++] = x;
  if (m === 0) return Number.NaN;
  const s = v.subarray(0, m).sort();
  const h = m >> 1;
  return m % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
}
