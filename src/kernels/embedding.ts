import { type DispatchSpec, paramsBytes } from '../gpu/program';
import type { KernelDef } from '../gpu/pipelines';
import { grid1d } from './grid';

export const embeddingKernel: KernelDef = {
  name: 'reference/embedding',
  file: 'reference/embedding.wgsl',
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
): DispatchSpec {
  return {
    label,
    kernel: embeddingKernel,
    constants: { WG },
    buffers: b,
    params: paramsBytes([T, d, V]),
    workgroups: grid1d(T * d, WG),
  };
}
