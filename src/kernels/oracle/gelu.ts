import type { DispatchSpec } from '../../gpu/program';
import { dispatch1d, kernelOf } from '../define';
import type { KernelOpts } from '../grid';
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
  return dispatch1d(label, dfGeluKernel, WG, n, opts, b, [n]);
}
