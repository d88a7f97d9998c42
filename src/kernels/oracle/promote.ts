import type { DispatchSpec } from '../../gpu/program';
import { dispatch1d, kernelOf } from '../define';
import type { KernelOpts } from '../grid';

export const dfPromoteKernel = kernelOf('oracle/promote', null, {
  x: 'read', // [n] f32
  out: 'rw', // [n] df
});

const WG = 256;

/** out = (x, 0): f32 [n] -> df [n], exactly. */
export function dfPromote(
  label: string,
  b: { x: GPUBuffer; out: GPUBuffer },
  n: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return dispatch1d(label, dfPromoteKernel, WG, n, opts, b, [n]);
}
