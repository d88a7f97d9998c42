import type { DispatchSpec } from '../gpu/program';
import { dispatchOf, kernelOf } from './define';
import { grid1d } from './grid';

export const dfHiKernel = kernelOf('compare/df_hi', null, {
  x: 'read', // [n] vec2<f32> (hi, lo)
  y: 'rw', // [n] f32
});

const WG = 256;

/** y = hi(x): a double-float tensor rounded to f32 — x: [n] pairs, y: [n]. */
export function dfHi(label: string, b: { x: GPUBuffer; y: GPUBuffer }, n: number): DispatchSpec {
  return dispatchOf(label, dfHiKernel, { WG }, b, [n], grid1d(n, WG));
}
