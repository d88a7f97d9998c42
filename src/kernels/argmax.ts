// Launcher for the GPU greedy pick (shaders/reference/argmax.wgsl): the index of a logits row's largest value,
// lowest index on ties, NaN and -Inf never chosen — the same answer as argmax() in src/engine/engine.ts.
import type { DispatchSpec } from '../gpu/program';
import { dispatchOf, kernelOf } from './define';
import type { KernelOpts } from './grid';

export const argmaxKernel = kernelOf('reference/argmax', null, {
  x: 'read', // [offset + n] f32
  out: 'rw', // [1] u32
});

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
  return dispatchOf(label, argmaxKernel, { WG, ...opts.constants }, b, [offset, n], [1, 1, 1]);
}
