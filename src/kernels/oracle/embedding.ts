import type { KernelDef } from '../../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../../gpu/program';
import { grid1d, type KernelOpts } from '../grid';
import { DF_WEIGHT_INCLUDES } from './df-common';

export const dfEmbeddingKernel: KernelDef = {
  name: 'oracle/embedding',
  file: 'oracle/embedding.wgsl',
  includes: DF_WEIGHT_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'ids', kind: 'read' }, // [T] u32
    { name: 'w', kind: 'read' }, // [rows, d]: rows row0.. of the [V, d] table, f32 or packed f16
    { name: 'out', kind: 'rw' }, // [T, d] df
  ],
};

const WG = 256;

/** out[t, :] = table[ids[t], :] as df, for ids in [row0, row0 + rows) — ids: [T], table: [rows, d]. */
export function dfEmbedding(
  label: string,
  b: { ids: GPUBuffer; table: GPUBuffer; out: GPUBuffer },
  T: number,
  d: number,
  chunk: { row0: number; rows: number },
  opts: KernelOpts = {},
): DispatchSpec {
  return {
    label,
    kernel: dfEmbeddingKernel,
    constants: { WG, ...opts.constants },
    buffers: { ids: b.ids, w: b.table, out: b.out },
    params: paramsBytes([T, d, chunk.row0, chunk.rows]),
    workgroups: grid1d(T * d, WG),
  };
}
