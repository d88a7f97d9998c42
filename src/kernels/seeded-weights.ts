// Launcher of the seeded-weights generator (shaders/model/seeded_weights.wgsl; the generator is defined in
// src/numeric/seeded.ts, its CPU twin in src/model/seeded-weights.ts): fills one weight buffer with its
// tensor's elements.
import type { DispatchSpec } from '../gpu/program';
import { type SeededTensor, tensorKey } from '../numeric/seeded';
import { dispatchOf, kernelOf } from './define';
import { grid1d } from './grid';

export const seededWeightsKernel = kernelOf('model/seeded_weights', null, {
  out: 'rw', // [count] f32 bits, or [ceil(count / 2)] packed f16
});

const WG = 256;

/** How a buffer stores its elements: f32, f32 rounded to f16 values (an F16 model in f32 storage), packed f16. */
export type SeededOut = 'f32' | 'f16-in-f32' | 'f16';
const OUT_CODE: Record<SeededOut, number> = { f32: 0, 'f16-in-f32': 1, f16: 2 };

/** out = elements [first, first + count) of tensor `t` under `seed`. */
export function seededWeights(
  label: string,
  out: GPUBuffer,
  seed: number,
  t: SeededTensor,
  first: number,
  count: number,
  store: SeededOut,
): DispatchSpec {
  if (!Number.isSafeInteger(first + count) || first + count > 2 ** 32) {
    throw new Error(`${label}: element index ${first + count} is past the generator's 2^32 counter`);
  }
  const words = store === 'f16' ? Math.ceil(count / 2) : count;
  return dispatchOf(
    label,
    seededWeightsKernel,
    { WG, OUT: OUT_CODE[store] },
    { out },
    [tensorKey(seed, t.id), first, count, { f32: t.scale }, { f32: t.offset }],
    grid1d(Math.max(1, words), WG),
  );
}
