import type { BufferRef, KernelDef } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import type { KernelOpts } from './grid';
import { ceilDiv } from './grid';

export const linearKernel: KernelDef = {
  name: 'reference/linear',
  file: 'reference/linear.wgsl',
  includes: ['common/precision.wgsl', 'common/weights.wgsl'],
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'x', kind: 'read' }, // [M, K]
    { name: 'w', kind: 'read' }, // [N, K]
    { name: 'b', kind: 'read' }, // [N]
    { name: 'y', kind: 'rw' }, // [M, N]
  ],
};

const TILE = 16;

/** y[M, N] = x[M, K] · W[N, K]^T (+ b[N]); pass `b: null` for no bias (a dummy buffer is bound). */
export function linear(
  label: string,
  buf: { x: GPUBuffer; w: BufferRef; b: GPUBuffer | null; y: GPUBuffer; dummy: GPUBuffer },
  M: number,
  N: number,
  K: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return {
    label,
    kernel: linearKernel,
    constants: { TILE, ...opts.constants },
    buffers: { x: buf.x, w: buf.w, b: buf.b ?? buf.dummy, y: buf.y },
    params: paramsBytes([M, N, K, buf.b ? 1 : 0]),
    workgroups: [ceilDiv(N, TILE), ceilDiv(M, TILE), 1],
  };
}
