import { elementwise, kernelOf } from './define';

export const swigluKernel = kernelOf('reference/swiglu', ['common/precision.wgsl', 'common/silu.wgsl'], {
  gate: 'read', // [n]
  up: 'read', // [n]
  y: 'rw', // [n]
});

const WG = 256;

/** y = silu(gate) · up elementwise (the Llama MLP between its projections) — gate, up, y: [n]. */
export const swiglu = elementwise<{ gate: GPUBuffer; up: GPUBuffer; y: GPUBuffer }>(swigluKernel, WG);
