// The Llama family's split-K reductions folded into the op after them: the o and the down projections' partial sums
// left in the workspace (fused-linear-fold.ts linearBiasPartial) are added up by the residual add + RMSNorm that reads
// their output anyway (shaders/fused/add_rmsnorm_fold.wgsl), one dispatch fewer per projection. The same bits as the
// reduction followed by fused-llama.ts addRmsNorm.
import type { DispatchSpec } from '../gpu/program';
import { kernelOf } from './define';
import { partialsRange, type SplitPartials } from './fused-linear-fold';
import { rmsNormDispatch } from './fused-llama';
import type { NormOpts } from './fused-norm';

export const addRmsNormFoldKernel = kernelOf(
  'fused/add_rmsnorm_fold',
  ['common/precision.wgsl', 'common/row_stats.wgsl', 'common/rms_row.wgsl'],
  {
    a: 'read', // [rows, d] residual stream
    b_bias: 'read', // [d] the projection's bias (or a dummy)
    b_part: 'read', // [S, rows, d] the projection's partials
    w: 'read', // [d]
    b: 'rw', // [rows, d] the projection's output
    r: 'rw', // [rows, d]
    y: 'rw', // [rows, d]
  },
);

/**
 * b = the split projection's output formed from its partials (as its reduction would), r = a + b, y = RMSNorm(r; w,
 * eps): a, b, r, y [rows, d], w [d]. Faults as addRmsNorm's: FAULT_EPS_OUTSIDE, row_stats' FAULT_EPS_SCALE and
 * FAULT_REORDER.
 */
export function addRmsNormFold(
  label: string,
  buf: {
    a: GPUBuffer;
    part: SplitPartials;
    w: GPUBuffer;
    b: GPUBuffer;
    r: GPUBuffer;
    y: GPUBuffer;
    dummy: GPUBuffer;
  },
  rows: number,
  d: number,
  eps: number,
  opts: NormOpts = {},
): DispatchSpec {
  const { part } = buf;
  const buffers = {
    a: buf.a,
    b_bias: part.bias ?? buf.dummy,
    b_part: partialsRange(part, rows, d),
    w: buf.w,
    b: buf.b,
    r: buf.r,
    y: buf.y,
  };
  const more = [part.K, part.kChunk, part.bias ? 1 : 0];
  return rmsNormDispatch(label, addRmsNormFoldKernel, [rows, d, eps], opts, {}, buffers, more);
}
