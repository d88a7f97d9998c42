import type { KernelDef } from '../../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../../gpu/program';
import { grid1d, type KernelOpts } from '../grid';
import { DF_INCLUDES } from './df-common';

export const dfResidualKernel: KernelDef = {
  name: 'oracle/residual',
  file: 'oracle/residual.wgsl',
  includes: DF_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'a', kind: 'read' }, // [n] df
    { name: 'b', kind: 'read' }, // [n] df
    { name: 'c', kind: 'read' }, // [n] df (dummy when absent)
    { name: 'out', kind: 'rw' }, // [n] df
  ],
};

const WG = 256;

/** out = (a + b) + c, or a + b when `c` is null (a dummy buffer is bound) — all [n] df, HF's operand order. */
export function dfResidual(
  label: string,
  buf: { a: GPUBuffer; b: GPUBuffer; c: GPUBuffer | null; out: GPUBuffer; dummy: GPUBuffer },
  n: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return {
    label,
    kernel: dfResidualKernel,
    constants: { WG, ...opts.constants },
    buffers: { a: buf.a, b: buf.b, c: buf.c ?? buf.dummy, out: buf.out },
    params: paramsBytes([n, buf.c ? 1 : 0]),
    workgroups: grid1d(n, WG),
  };
}
