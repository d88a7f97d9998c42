import type { DispatchSpec } from '../../gpu/program';
import { dispatch1d, kernelOf } from '../define';
import type { KernelOpts } from '../grid';

export const dfPromoteKernel = kernelOf('oracle/promote', null, {
  x: 'read', // [offset + n] f32
  out: 'rw', // [n] df
});

const WG = 256;

/** out = (x[offset + i], 0): f32 -> df, exactly — n elements from element `offset` of x (default 0). */
export function dfPromote(
  label: string,
  b: { x: GPUBuffer; out: GPUBuffer },
  n: number,
  opts: KernelOpts = {},
  offset = 0,
): DispatchSpec {
  return dispatch1d(label, dfPromoteKernel, WG, n, opts, b, [n, offset]);
}
