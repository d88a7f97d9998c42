import type { KernelDef } from '../../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../../gpu/program';
import { grid1d, type KernelOpts } from '../grid';

export const dfPromoteKernel: KernelDef = {
  name: 'oracle/promote',
  file: 'oracle/promote.wgsl',
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'x', kind: 'read' }, // [n] f32
    { name: 'out', kind: 'rw' }, // [n] df
  ],
};

const WG = 256;

/** out = (x, 0): f32 [n] -> df [n], exactly. */
export function dfPromote(
  label: string,
  b: { x: GPUBuffer; out: GPUBuffer },
  n: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return {
    label,
    kernel: dfPromoteKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([n]),
    workgroups: grid1d(n, WG),
  };
}
