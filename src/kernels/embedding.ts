import type { KernelDef } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import type { KernelOpts } from './grid';
import { grid1d } from './grid';

export const embeddingKernel: KernelDef = {
  name: 'reference/embedding',
  file: 'reference/embedding.wgsl',
  includes: ['common/precision.wgsl'],
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'ids', kind: 'read' }, // [T] u32
    { name: 'table', kind: 'read' }, // [V, d]
    { name: 'out', kind: 'rw' }, // [T, d]
  ],
};

const WG = 256;

/** out[t, :] = table[ids[t], :] — ids: [T], table: [V, d], out: [T, d]. */
export function embedding(
  label: string,
  b: { ids: GPUBuffer; table: GPUBuffer; out: GPUBuffer },
  T: number,
  d: number,
  V: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return {
    label,
    kernel: embeddingKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([T, d, V]),
    workgroups: grid1d(T * d, WG),
  };
}
