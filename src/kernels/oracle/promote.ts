import { elementwise, kernelOf } from '../define';

export const dfPromoteKernel = kernelOf('oracle/promote', null, {
  x: 'read', // [n] f32
  out: 'rw', // [n] df
});

const WG = 256;

/** out = (x, 0): f32 [n] -> df [n], exactly. */
export const dfPromote = elementwise<{ x: GPUBuffer; out: GPUBuffer }>(dfPromoteKernel, WG);
