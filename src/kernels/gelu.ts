import type { KernelDef } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import type { KernelOpts } from './grid';
import { grid1d } from './grid';

export const geluKernel: KernelDef = {
  name: 'reference/gelu',
  file: 'reference/gelu.wgsl',
  includes: ['common/precision.wgsl', 'common/gelu.wgsl'],
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'x', kind: 'read' }, // [n]
    { name: 'y', kind: 'rw' }, // [n]
  ],
};

const WG = 256;

/** y = gelu_exact(x) elementwise — x, y: [n]. */
export function gelu(
  label: string,
  b: { x: GPUBuffer; y: GPUBuffer },
  n: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return {
    label,
    kernel: geluKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([n]),
    workgroups: grid1d(n, WG),
  };
}
