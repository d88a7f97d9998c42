import type { DispatchSpec } from '../gpu/program';
import { dispatchOf, kernelOf } from './define';
import { type KernelOpts, rowGroups } from './grid';

export const rmsNormKernel = kernelOf('reference/rmsnorm', ['common/precision.wgsl'], {
  x: 'read', // [rows, d]
  weight: 'read', // [d]
  y: 'rw', // [rows, d]
});

const WG = 128;

/**
 * y = x / sqrt(mean(x²) + eps) · weight over d (HF LlamaRMSNorm) — x, y: [rows, d]; weight: [d]. One workgroup per
 * row. Qwen3's per-head q/k norm is the same launch with rows = T · heads, d = head_dim.
 */
export function rmsNorm(
  label: string,
  b: { x: GPUBuffer; weight: GPUBuffer; y: GPUBuffer },
  rows: number,
  d: number,
  eps: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return dispatchOf(
    label,
    rmsNormKernel,
    { WG, ...opts.constants },
    b,
    [rows, d, { f32: eps }],
    rowGroups(rows),
  );
}
