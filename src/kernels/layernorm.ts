import type { DispatchSpec } from '../gpu/program';
import { dispatchOf, kernelOf } from './define';
import type { KernelOpts } from './grid';

export const layerNormKernel = kernelOf('reference/layernorm', ['common/precision.wgsl'], {
  x: 'read', // [rows, d]
  weight: 'read', // [d]
  bias: 'read', // [d]
  y: 'rw', // [rows, d]
});

const WG = 128;

/** y = LayerNorm(x) over d, biased variance — x, y: [rows, d]; weight, bias: [d]. One workgroup per row. */
export function layerNorm(
  label: string,
  b: { x: GPUBuffer; weight: GPUBuffer; bias: GPUBuffer; y: GPUBuffer },
  rows: number,
  d: number,
  eps: number,
  opts: KernelOpts = {},
): DispatchSpec {
  const params = [rows, d, { f32: eps }];
  return dispatchOf(label, layerNormKernel, { WG, ...opts.constants }, b, params, [rows, 1, 1]);
}
