import type { KernelDef } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import type { KernelOpts } from './grid';

export const layerNormKernel: KernelDef = {
  name: 'reference/layernorm',
  file: 'reference/layernorm.wgsl',
  includes: ['common/precision.wgsl'],
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'x', kind: 'read' }, // [rows, d]
    { name: 'weight', kind: 'read' }, // [d]
    { name: 'bias', kind: 'read' }, // [d]
    { name: 'y', kind: 'rw' }, // [rows, d]
  ],
};

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
  return {
    label,
    kernel: layerNormKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([rows, d, { f32: eps }]),
    workgroups: [rows, 1, 1],
  };
}
