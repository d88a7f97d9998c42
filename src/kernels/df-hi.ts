import type { KernelDef } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import { grid1d } from './grid';

export const dfHiKernel: KernelDef = {
  name: 'compare/df_hi',
  file: 'compare/df_hi.wgsl',
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'x', kind: 'read' }, // [n] vec2<f32> (hi, lo)
    { name: 'y', kind: 'rw' }, // [n] f32
  ],
};

const WG = 256;

/** y = hi(x): a double-float tensor rounded to f32 — x: [n] pairs, y: [n]. */
export function dfHi(label: string, b: { x: GPUBuffer; y: GPUBuffer }, n: number): DispatchSpec {
  return {
    label,
    kernel: dfHiKernel,
    constants: { WG },
    buffers: b,
    params: paramsBytes([n]),
    workgroups: grid1d(n, WG),
  };
}
