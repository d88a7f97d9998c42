import type { DispatchSpec } from '../../gpu/program';
import { dispatchOf, kernelOf } from '../define';
import { grid1d, type KernelOpts } from '../grid';
import { DF_MATH_INCLUDES } from './df-common';

export const dfGeluKernel = kernelOf('oracle/gelu', DF_MATH_INCLUDES, {
  x: 'read', // [n] df
  y: 'rw', // [n] df
});

const WG = 256;

/** y = gelu_exact(x) elementwise in df — x, y: [n]. */
export function dfGelu(
  label: string,
  b: { x: GPUBuffer; y: GPUBuffer },
  n: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return dispatchOf(label, dfGeluKernel, { WG, ...opts.constants }, b, [n], grid1d(n, WG));
}
