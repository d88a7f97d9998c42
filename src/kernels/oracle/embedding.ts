import type { DispatchSpec } from '../../gpu/program';
import { dispatch1d, kernelOf } from '../define';
import type { KernelOpts } from '../grid';
import { DF_WEIGHT_INCLUDES } from './df-common';

export const dfEmbeddingKernel = kernelOf('oracle/embedding', DF_WEIGHT_INCLUDES, {
  ids: 'read', // [T] u32
  w: 'read', // [rows, d]: rows row0.. of the [V, d] table, f32 or packed f16
  out: 'rw', // [T, d] df
});

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
  const buffers = { ids: b.ids, w: b.table, out: b.out };
  return dispatch1d(label, dfEmbeddingKernel, WG, T * d, opts, buffers, [T, d, chunk.row0, chunk.rows]);
}
