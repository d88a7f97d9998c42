// Shared by the oracle's kernel launchers: the WGSL snippets every df kernel includes, and a double split into
// its df pair (hi = f32 nearest, lo = f32 nearest of the remainder: hi + lo carries ~48 bits).

/** Prepended to every oracle kernel: the double-float library. */
export const DF_INCLUDES = ['oracle/df.wgsl'] as const;
/** For kernels that also need exp/erf/GELU in df. */
export const DF_MATH_INCLUDES = ['oracle/df.wgsl', 'oracle/df_math.wgsl'] as const;
/** For kernels that read the model's weights (f32 bits or packed f16: W_F16 lives in precision.wgsl). */
export const DF_WEIGHT_INCLUDES = ['common/precision.wgsl', 'common/weights.wgsl', 'oracle/df.wgsl'] as const;

/** v as a df pair: hi = fround(v), lo = fround(v − hi). */
export function dfPair(v: number): [number, number] {
  const hi = Math.fround(v);
  return [hi, Math.fround(v - hi)];
}

/** The two f32 params of a df value (for paramsBytes). */
export function dfParam(v: number): [{ f32: number }, { f32: number }] {
  const [hi, lo] = dfPair(v);
  return [{ f32: hi }, { f32: lo }];
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
