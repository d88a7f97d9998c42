import { elementwise, kernelOf } from './define';

export const geluKernel = kernelOf('reference/gelu', ['common/precision.wgsl', 'common/gelu.wgsl'], {
  x: 'read', // [n]
  y: 'rw', // [n]
});

const WG = 256;

/** y = gelu_exact(x) elementwise — x, y: [n]. */
export const gelu = elementwise<{ x: GPUBuffer; y: GPUBuffer }>(geluKernel, WG);
