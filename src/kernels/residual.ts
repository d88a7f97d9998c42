import type { DispatchSpec } from '../gpu/program';
import { dispatchOf, kernelOf } from './define';
import type { KernelOpts } from './grid';
import { grid1d } from './grid';

export const residualAddKernel = kernelOf('reference/residual_add', ['common/precision.wgsl'], {
  a: 'read', // [n] residual stream (hidden_states)
  b: 'read', // [n] attn output
  c: 'read', // [n] mlp output (three-input form only)
  out: 'rw', // [n]
});

const WG = 256;

/** out = b + a, or with c: out = (c + b) + a (HF parallel-residual order). out must not alias an input. */
export function residualAdd(
  label: string,
  buf: { a: GPUBuffer; b: GPUBuffer; c: GPUBuffer | null; out: GPUBuffer },
  n: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return dispatchOf(
    label,
    residualAddKernel,
    { WG, THREE: buf.c !== null, ...opts.constants },
    { a: buf.a, b: buf.b, c: buf.c ?? buf.b, out: buf.out },
    [n],
    grid1d(n, WG),
  );
}
