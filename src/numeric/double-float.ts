// Double-float (df) numbers on the CPU side: a double split into its f32 pair (hi = f32 nearest, lo = f32 nearest
// of the remainder: hi + lo carries ~48 bits), the interleaved pair layout of the GPU oracle's tensors, and the
// relative L2 distance its tests and benchmarks report. Imports nothing of ours.

/** v as a df pair: hi = fround(v), lo = fround(v − hi). */
export function dfPair(v: number): [number, number] {
  const hi = Math.fround(v);
  return [hi, Math.fround(v - hi)];
}

/** Float64Array -> interleaved (hi, lo) f32 pairs, the df tensor layout. */
export function toDfPairs(data: ArrayLike<number>): Float32Array {
  const out = new Float32Array(data.length * 2);
  for (let i = 0; i < data.length; i++) {
    const hi = Math.fround(data[i]);
    out[2 * i] = hi;
    out[2 * i + 1] = Math.fround(data[i] - hi);
  }
  return out;
}

/** Interleaved (hi, lo) f32 pairs -> hi + lo in f64. */
export function fromDfPairs(pairs: Float32Array, n = pairs.length / 2): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = pairs[2 * i] + pairs[2 * i + 1];
  return out;
}

/** Relative L2 distance ‖a − b‖ / ‖b‖ (NaN when a has a non-finite value; ‖a − b‖ when b is all zeros). */
export function relL2(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    if (!Number.isFinite(a[i])) return Number.NaN;
    num += (a[i] - b[i]) ** 2;
    den += b[i] ** 2;
  }
  return den === 0 ? Math.sqrt(num) : Math.sqrt(num / den);
}
