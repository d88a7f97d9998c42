// Launcher for the GPU greedy pick (shaders/reference/argmax.wgsl): the index of a logits row's largest value,
// lowest index on ties, NaN and -Inf never chosen — the same answer as argmax() in src/engine/engine.ts.
import type { KernelDef } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import type { KernelOpts } from './grid';

export const argmaxKernel: KernelDef = {
  name: 'reference/argmax',
  file: 'reference/argmax.wgsl',
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'x', kind: 'read' }, // [offset + n] f32
    { name: 'out', kind: 'rw' }, // [1] u32
  ],
};

const WG = 256;

/** out[0] = argmax of x[offset .. offset + n) (one workgroup). */
export function argmaxRow(
  label: string,
  b: { x: GPUBuffer; out: GPUBuffer },
  offset: number,
  n: number,
  opts: KernelOpts = {},
): DispatchSpec {
  if (!Number.isInteger(n) || n < 1) throw new Error(`${label}: argmax over ${n} values`);
  return {
    label,
    kernel: argmaxKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([offset, n]),
    workgroups: [1, 1, 1],
  };
}
