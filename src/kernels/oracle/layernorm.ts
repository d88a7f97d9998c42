import type { DispatchSpec } from '../../gpu/program';
import { dispatchOf, kernelOf } from '../define';
import { type KernelOpts, rowGroups } from '../grid';
import { DF_INCLUDES, dfParam } from './df-common';

export const dfLayerNormKernel = kernelOf('oracle/layernorm', DF_INCLUDES, {
  x: 'read', // [rows, d] df
  weight: 'read', // [d] f32
  bias: 'read', // [d] f32
  y: 'rw', // [rows, d] df
});

const WG = 64;

/** y = LayerNorm(x) over d in df, biased variance, eps as a df value — x, y: [rows, d]; one workgroup a row. */
export function dfLayerNorm(
  label: string,
  b: { x: GPUBuffer; weight: GPUBuffer; bias: GPUBuffer; y: GPUBuffer },
  rows: number,
  d: number,
  eps: number,
  opts: KernelOpts = {},
): DispatchSpec {
  const params = [rows, d, 0, 0, ...dfParam(eps), ...dfParam(1)];
  return dispatchOf(label, dfLayerNormKernel, { WG, ...opts.constants }, b, params, rowGroups(rows));
}
