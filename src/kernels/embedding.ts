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
    { name: 'table', kind: 'read' }, // [rows, d]: rows row0.. of the [V, d] table
    { name: 'out', kind: 'rw' }, // [T, d]
  ],
};

const WG = 256;

/** out[t, :] = table[ids[t], :] for ids in [row0, row0 + rows) — ids: [T], table: [rows, d], out: [T, d]. */
export function embedding(
  label: string,
  b: { ids: GPUBuffer; table: GPUBuffer; out: GPUBuffer },
  T: number,
  d: number,
  chunk: { row0: number; rows: number },
  opts: KernelOpts = {},
): DispatchSpec {
  return {
    label,
    kernel: embeddingKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([T, d, chunk.row0, chunk.rows]),
    workgroups: grid1d(T * d, WG),
  };
}
