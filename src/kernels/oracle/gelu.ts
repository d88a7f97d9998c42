import { elementwise, kernelOf } from '../define';
import { DF_MATH_INCLUDES } from './df-common';

export const dfGeluKernel = kernelOf('oracle/gelu', DF_MATH_INCLUDES, {
  x: 'read', // [n] df
  y: 'rw', // [n] df
});

const WG = 256;

/** y = gelu_exact(x) elementwise in df — x, y: [n]. */
export const dfGelu = elementwise<{ x: GPUBuffer; y: GPUBuffer }>(dfGeluKernel, WG);
