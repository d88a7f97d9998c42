import type { DispatchSpec } from '../../gpu/program';
import { dispatchOf, kernelOf } from '../define';
import { grid1d, type KernelOpts } from '../grid';
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
  return dispatchOf(
    label,
    dfEmbeddingKernel,
    { WG, ...opts.constants },
    { ids: b.ids, w: b.table, out: b.out },
    [T, d, chunk.row0, chunk.rows],
    grid1d(T * d, WG),
  );
}
