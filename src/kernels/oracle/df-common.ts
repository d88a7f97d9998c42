// Shared by the oracle's kernel launchers: the WGSL snippets every df kernel includes, and a double as the two
// f32 params of its df pair (the pair itself: src/numeric/double-float.ts).
import { dfPair } from '../../numeric/double-float';

/** Prepended to every oracle kernel: the double-float library. */
export const DF_INCLUDES = ['oracle/df.wgsl'] as const;
/** For kernels that also need exp/erf/GELU in df. */
export const DF_MATH_INCLUDES = ['oracle/df.wgsl', 'oracle/df_math.wgsl'] as const;
/** For kernels that read the model's weights (f32 bits or packed f16: W_F16 lives in precision.wgsl). */
export const DF_WEIGHT_INCLUDES = ['common/precision.wgsl', 'common/weights.wgsl', 'oracle/df.wgsl'] as const;

/** The two f32 params of a df value (for paramsBytes). */
export function dfParam(v: number): [{ f32: number }, { f32: number }] {
  const [hi, lo] = dfPair(v);
  return [{ f32: hi }, { f32: lo }];
}
