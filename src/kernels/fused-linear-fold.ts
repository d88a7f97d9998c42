// Split-K reductions folded into the op after them (src/engine/plan-fold.ts decides where): a split GEMM's
// partial sums left in a workspace for a later op to add up ({linearBias,linearResidual}Partial), and the MLP's
// residual epilogue that forms attention.dense's output from its partials on the way (linearResidualFoldOps).
// Every folded sum is the reduction's own: partials added in split order through acc(), then the epilogue.
import type { BufferRef, KernelDef } from '../gpu/pipelines';
import type { DispatchSpec } from '../gpu/program';
import {
  type GemmOpts,
  gemmKernels,
  gemmLaunch,
  gemmSpecs,
  type LinearBuffers,
  linearBiasOps,
  linearResidualOps,
  type ResidualBuffers,
} from './fused-linear';
import { ceilDiv } from './grid';

// attention.dense's split-K reduction folded into dense_4h_to_h's epilogue (src/engine/plan-fold.ts).
const linearResidualFoldPair = gemmKernels('linear_residual_fold', 'fused/linear_residual_fold.wgsl', [
  { name: 'b', kind: 'read' }, // [N]
  { name: 'r1', kind: 'read' }, // [M, N] hidden_states
  { name: 'dense_b', kind: 'read' }, // [N] attention.dense bias
  { name: 'dense_part', kind: 'read' }, // [S', M, N] attention.dense's partials
  { name: 'attn', kind: 'rw' }, // [M, N] attn_output
  { name: 'y', kind: 'rw' }, // [M, N]
]);

/** The fold's kernels: the GEMM, its split-K partial GEMM and reduction (the same epilogue file). */
export const linearResidualFoldKernels = linearResidualFoldPair;

/** Every kernel of this module (pipelines compiled ahead, custom-kernel slot checks). */
export const FOLD_LINEAR_KERNELS: readonly KernelDef[] = [
  linearResidualFoldPair.gemm,
  linearResidualFoldPair.partial,
  linearResidualFoldPair.reduce,
  linearResidualFoldPair.plain,
  linearResidualFoldPair.plainPartial,
  linearResidualFoldPair.gemv,
];

/** A split-K GEMM's partials left in a workspace for the op after it to reduce (src/engine/plan-fold.ts). */
export interface SplitPartials {
  part: GPUBuffer; // [S, M, N] raw partial sums, from float `offset`
  offset: number;
  K: number;
  kChunk: number;
  bias: GPUBuffer | null; // [N]
}

/** The split-K partial GEMM of a launch alone (its dispatches `ops`), into the workspace `ws`: see below. */
function partialOnly(
  label: string,
  ops: (opts: GemmOpts) => DispatchSpec[],
  M: number,
  N: number,
  K: number,
  bias: GPUBuffer | null,
  ws: PartialsWorkspace,
  opts: GemmOpts,
): { spec: DispatchSpec; partials: SplitPartials } | null {
  const launch = gemmLaunch(label, M, N, K, { ...opts, workspace: (f) => ws(f).buffer });
  if (launch.split === 1 || launch.gemv) return null; // one dispatch: no partials to leave
  const got: { at?: { buffer: GPUBuffer; offset: number } } = {};
  const workspace = (floats: number) => {
    got.at = ws(floats);
    return got.at.buffer;
  };
  const specs = ops({ ...opts, workspace });
  const at = got.at;
  if (specs.length !== 2 || !at)
    throw new Error(`${label}: expected a split-K partial GEMM and its reduction`);
  const floats = launch.split * M * N;
  // The partial GEMM writes from the region's start: its workspace binding is that range of the buffer.
  const spec = {
    ...specs[0],
    buffers: { ...specs[0].buffers, ws: { buffer: at.buffer, offset: at.offset * 4, size: floats * 4 } },
  };
  return { spec, partials: { part: at.buffer, offset: at.offset, K, kChunk: launch.kChunk, bias } };
}

/** The range of a buffer that holds a fold's partials [S, M, N]. */
export function partialsRange(p: SplitPartials, M: number, N: number): BufferRef {
  return { buffer: p.part, offset: p.offset * 4, size: ceilDiv(p.K, p.kChunk) * M * N * 4 };
}

/** Where a fold's partials go: a buffer and a float offset (256-byte aligned) with room for `floats`. */
export type PartialsWorkspace = (floats: number) => { buffer: GPUBuffer; offset: number };

/** The partial GEMM alone of a launcher `ops` whose buffers carry the bias `b` (see partialOnly). */
function partialOf<B extends { b: GPUBuffer | null }>(
  ops: (label: string, buf: B, M: number, N: number, K: number, opts: GemmOpts) => DispatchSpec[],
) {
  return (
    label: string,
    buf: B,
    M: number,
    N: number,
    K: number,
    ws: PartialsWorkspace,
    opts: GemmOpts = {},
  ): { spec: DispatchSpec; partials: SplitPartials } | null =>
    partialOnly(label, (o) => ops(label, buf, M, N, K, o), M, N, K, buf.b, ws, opts);
}

/**
 * The split-K partial GEMM of linearBiasOps alone, into `ws` (a workspace read by a later op that folds the
 * reduction in): the dispatch and what that op needs to reduce it, or null when the launch is not split.
 */
export const linearBiasPartial = partialOf<LinearBuffers>(linearBiasOps);

/** The same for linearResidualOps (the MLP down-projection whose reduction the next LayerNorm folds in). */
export const linearResidualPartial = partialOf<ResidualBuffers>(linearResidualOps);

/**
 * linearResidualOps (parallel residual, r2 = attn_output) with attention.dense's split-K reduction folded in:
 * attn_output [M, N] is formed from `dense` (its partials and bias) as dense's own reduction would, written to
 * `attn` and added where r2 would be; the same bits as the unfolded pair. One dispatch, or two when split-K.
 */
export function linearResidualFoldOps(
  label: string,
  buf: Omit<ResidualBuffers, 'r2'> & { attn: GPUBuffer; dense: SplitPartials },
  M: number,
  N: number,
  K: number,
  opts: GemmOpts = {},
): DispatchSpec[] {
  const own = {
    b: buf.b ?? buf.dummy,
    r1: buf.r1,
    dense_b: buf.dense.bias ?? buf.dummy,
    dense_part: partialsRange(buf.dense, M, N),
    attn: buf.attn,
    y: buf.y,
  };
  const head = [buf.b ? 1 : 0, buf.dense.K, buf.dense.kChunk, buf.dense.bias ? 1 : 0];
  return gemmSpecs(linearResidualFoldPair, label, buf, own, M, N, K, head, {}, opts);
}
