import type { DispatchSpec } from '../../gpu/program';
import { dispatch1d, kernelOf } from '../define';
import type { KernelOpts } from '../grid';
import { DF_INCLUDES } from './df-common';

export const dfResidualKernel = kernelOf('oracle/residual', DF_INCLUDES, {
  a: 'read', // [n] df
  b: 'read', // [n] df
  c: 'read', // [n] df (dummy when absent)
  out: 'rw', // [n] df
});

const WG = 256;

/** out = (a + b) + c, or a + b when `c` is null (a dummy buffer is bound) — all [n] df, HF's operand order. */
export function dfResidual(
  label: string,
  buf: { a: GPUBuffer; b: GPUBuffer; c: GPUBuffer | null; out: GPUBuffer; dummy: GPUBuffer },
  n: number,
  opts: KernelOpts = {},
): DispatchSpec {
  const buffers = { a: buf.a, b: buf.b, c: buf.c ?? buf.dummy, out: buf.out };
  return dispatch1d(label, dfResidualKernel, WG, n, opts, buffers, [n, buf.c ? 1 : 0]);
}
