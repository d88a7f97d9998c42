import type { KernelDef } from '../../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../../gpu/program';
import { type KernelOpts, MAX_GROUPS } from '../grid';
import { DF_INCLUDES, dfParam } from './df-common';

export const dfLayerNormKernel: KernelDef = {
  name: 'oracle/layernorm',
  file: 'oracle/layernorm.wgsl',
  includes: DF_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'x', kind: 'read' }, // [rows, d] df
    { name: 'weight', kind: 'read' }, // [d] f32
    { name: 'bias', kind: 'read' }, // [d] f32
    { name: 'y', kind: 'rw' }, // [rows, d] df
  ],
};

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
  return {
    label,
    kernel: dfLayerNormKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([rows, d, 0, 0, ...dfParam(eps), ...dfParam(1)]),
    workgroups: rows <= MAX_GROUPS ? [rows, 1, 1] : [MAX_GROUPS, Math.ceil(rows / MAX_GROUPS), 1],
  };
}
