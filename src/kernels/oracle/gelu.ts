import type { KernelDef } from '../../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../../gpu/program';
import { grid1d, type KernelOpts } from '../grid';
import { DF_MATH_INCLUDES } from './df-common';

export const dfGeluKernel: KernelDef = {
  name: 'oracle/gelu',
  file: 'oracle/gelu.wgsl',
  includes: DF_MATH_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'x', kind: 'read' }, // [n] df
    { name: 'y', kind: 'rw' }, // [n] df
  ],
};

const WG = 256;

/** y = gelu_exact(x) elementwise in df — x, y: [n]. */
export function dfGelu(
  label: string,
  b: { x: GPUBuffer; y: GPUBuffer },
  n: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return {
    label,
    kernel: dfGeluKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([n]),
    workgroups: grid1d(n, WG),
  };
}
