import type { KernelDef } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import type { KernelOpts } from './grid';
import { grid1d } from './grid';

export const residualAddKernel: KernelDef = {
  name: 'reference/residual_add',
  file: 'reference/residual_add.wgsl',
  includes: ['common/precision.wgsl'],
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'a', kind: 'read' }, // [n] residual stream (hidden_states)
    { name: 'b', kind: 'read' }, // [n] attn output
    { name: 'c', kind: 'read' }, // [n] mlp output (three-input form only)
    { name: 'out', kind: 'rw' }, // [n]
  ],
};

const WG = 256;

/** out = b + a, or with c: out = (c + b) + a (HF parallel-residual order). out must not alias an input. */
export function residualAdd(
  label: string,
  buf: { a: GPUBuffer; b: GPUBuffer; c: GPUBuffer | null; out: GPUBuffer },
  n: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return {
    label,
    kernel: residualAddKernel,
    constants: { WG, THREE: buf.c !== null, ...opts.constants },
    buffers: { a: buf.a, b: buf.b, c: buf.c ?? buf.b, out: buf.out },
    params: paramsBytes([n]),
    workgroups: grid1d(n, WG),
  };
}
