import type { DispatchSpec } from '../gpu/program';
import { dispatch1d, kernelOf } from './define';
import type { KernelOpts } from './grid';

export const geluKernel = kernelOf('reference/gelu', ['common/precision.wgsl', 'common/gelu.wgsl'], {
  x: 'read', // [n]
  y: 'rw', // [n]
});

const WG = 256;

/** y = gelu_exact(x) elementwise — x, y: [n]. */
export function gelu(
  label: string,
  b: { x: GPUBuffer; y: GPUBuffer },
  n: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return dispatch1d(label, geluKernel, WG, n, opts, b, [n]);
}
