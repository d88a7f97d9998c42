// The types a plan is built from, shared by the plan builder (plan.ts), its launchers (plan-ops.ts) and the
// folds (plan-fold.ts, plan-fold-ops.ts): what a launcher returns, one layer as its ops see it, the buffers the
// layers share, the hooks faults use, and what a folded split-K reduction carries from its GEMM to its consumer.
import type { DispatchSpec } from '../gpu/program';
import type { GemmOpts } from '../kernels/fused-linear';
import type { PartialsWorkspace, SplitPartials } from '../kernels/fused-linear-fold';
import type { KernelOpts } from '../kernels/grid';
import type { KvPositions } from '../kernels/positions';
import type { FusedKernelId } from './fused-kernels';
import type { GpuModel } from './gpu-model';

/** Plan-level hooks: extra override constants per op (fault switches) and wiring faults. */
export interface PlanHooks {
  /** Extra constants for the ops of fused kernel `kernel` (or 'reference') in `layer` (null outside layers). */
  constants?(kernel: FusedKernelId | 'reference', layer: number | null): Record<string, number | boolean>;
  /** In-place aliasing: attention.dense (fused GEMM) writes its output over the residual stream it will be added to. */
  aliasResidual?(layer: number): boolean;
  /** Stale pooled buffer: attention.dense (fused GEMM) reads the previous layer's context instead of this layer's. */
  staleContext?(layer: number): boolean;
}

/** A tap an op writes: name, buffer, floats, and the column pieces of a split tap. */
export type TapSpec = [
  name: string,
  buffer: GPUBuffer,
  floats: number,
  parts?: { buffer: GPUBuffer; col0: number; cols: number }[],
];

/** What a launcher returns: the dispatch(es), given the op's kernel options, and the taps written after them. */
export interface Launch {
  make(k: KernelOpts): DispatchSpec | DispatchSpec[];
  writes: TapSpec[];
}

/** The activation buffers of a plan (shared by the layers; taps are copied out per op). */
export interface PlanBuffers {
  ln1: GPUBuffer; // [T, d]
  qkv: GPUBuffer; // [T, 3d]
  q: GPUBuffer; // [H, T, hd]
  scores: GPUBuffer | null; // [H, T, rows] (reference attention only)
  probs: GPUBuffer | null; // [H, T, rows]
  attnOut: GPUBuffer; // [T, d]
  residMid: GPUBuffer; // [T, d]
  ln2: GPUBuffer; // [T, d]
  fc1: GPUBuffer; // [T, ff]
  gelu: GPUBuffer; // [T, ff]
  mlpOut: GPUBuffer; // [T, d]
}

/** One layer as its ops see it. */
export interface LayerCtx {
  /** Tap prefix, 'layers.3'. */
  p: string;
  T: number;
  d: number;
  H: number;
  hd: number;
  ff: number;
  eps: number;
  rotaryNdims: number;
  parallel: boolean;
  weights: GpuModel['layers'][number];
  dummy: GPUBuffer;
  b: PlanBuffers;
  /** The residual stream entering the layer, and the buffer of the one leaving it: [T, d]. */
  x: GPUBuffer;
  xNext: GPUBuffer;
  /** This layer's attention context [T, d] (and what attention.dense reads: the stale-buffer fault may swap it). */
  ctx: GPUBuffer;
  denseIn: GPUBuffer;
  /** Where attention.dense writes (the aliasing fault: over x). */
  attnOut: GPUBuffer;
  /** What the MLP output is added to: x (parallel) or attn + x (sequential). */
  resid: GPUBuffer;
  /** k, v [H, rows, hd] (the KV cache's, or the plan's), rotary tables, token positions, keys attended to. */
  k: GPUBuffer;
  v: GPUBuffer;
  kvFloats: number;
  cos: GPUBuffer;
  sin: GPUBuffer;
  at: KvPositions;
  Tk: number;
  gemm: GemmOpts;
  /**
   * attention.dense's split-K reduction folded into its consumer (plan-fold.ts), or null: the workspace its
   * partials go to (kept until the consumer runs), and the partials, set by the dense launcher.
   */
  denseFold: DenseFold | null;
  /** This layer's MLP down-projection reduction folded into the next layer's LayerNorm, or null. */
  outFold: OutFold | null;
  /** The previous layer's, folded into this layer's LayerNorm (the same object), or null. */
  prevFold: OutFold | null;
}

/** attention.dense's fold: the workspace its partials go to, and the partials (set by its launcher). */
export interface DenseFold {
  ws: PartialsWorkspace;
  partials: SplitPartials | null;
}

/** A layer's MLP down-projection reduction folded into the next layer's LayerNorm. */
export interface OutFold {
  /** The producing layer's tap prefix, 'layers.3'. */
  p: string;
  /** Where its partials go: the buffer of attention.dense's (the LayerNorm binds both as one). */
  ws: PartialsWorkspace;
  /** What its residual adds: r1 (x, or attn + x) and, parallel, attn_output's buffer. */
  r1: GPUBuffer;
  attnOut: GPUBuffer;
  /** Its attention.dense fold, when that moves along (parallel): the LayerNorm forms attn_output too. */
  dense: DenseFold | null;
  /** Its partials (set by its launcher). */
  mlp: SplitPartials | null;
}
