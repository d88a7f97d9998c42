import type { DispatchSpec } from '../gpu/program';
import { dispatch1d, kernelOf } from './define';
import type { KernelOpts } from './grid';

export const embeddingKernel = kernelOf('reference/embedding', ['common/precision.wgsl'], {
  ids: 'read', // [T] u32
  table: 'read', // [rows, d]: rows row0.. of the [V, d] table
  out: 'rw', // [T, d]
});

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
  return dispatch1d(label, embeddingKernel, WG, T * d, opts, b, [T, d, chunk.row0, chunk.rows]);
}
