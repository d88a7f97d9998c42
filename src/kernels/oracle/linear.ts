import type { BufferRef, KernelDef } from '../../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../../gpu/program';
import { ceilDiv, type KernelOpts, MAX_GROUPS } from '../grid';
import { DF_WEIGHT_INCLUDES } from './df-common';

export const dfLinearKernel: KernelDef = {
  name: 'oracle/linear',
  file: 'oracle/linear.wgsl',
  includes: DF_WEIGHT_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'x', kind: 'read' }, // [M, K] df
    { name: 'w', kind: 'read' }, // [N, K] f32 or packed f16
    { name: 'b', kind: 'read' }, // [N] f32
    { name: 'y', kind: 'rw' }, // [M, N] df
  ],
};

/** Output block of one workgroup (32 × 32, see the WGSL header). */
const BLOCK = 32;

/**
 * y[M, N] = x[M, K] · W[N, K]^T (+ b[N]) in double-float — x, y df; W as stored (f32, or packed f16 with
 * W_F16 in opts.constants); pass `b: null` for no bias (a dummy buffer is bound).
 */
export function dfLinear(
  label: string,
  buf: { x: GPUBuffer; w: BufferRef; b: GPUBuffer | null; y: GPUBuffer; dummy: GPUBuffer },
  M: number,
  N: number,
  K: number,
  opts: KernelOpts = {},
): DispatchSpec {
  const gx = ceilDiv(N, BLOCK);
  const gy = ceilDiv(M, BLOCK);
  if (gx > MAX_GROUPS || gy > MAX_GROUPS)
    throw new Error(`${label}: ${M}x${N} output needs too many workgroups`);
  return {
    label,
    kernel: dfLinearKernel,
    constants: { ...opts.constants },
    buffers: { x: buf.x, w: buf.w, b: buf.b ?? buf.dummy, y: buf.y },
    params: paramsBytes([M, N, K, buf.b ? 1 : 0]),
    workgroups: [gx, gy, 1],
  };
}
