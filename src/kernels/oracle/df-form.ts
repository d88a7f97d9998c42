// What a double-float form is given (DfArgs) and the form every linear op kind shares: the types the df forms of the
// registry's ops are written against, wherever they live (kernels/oracle/df-forms.ts's table, the per-op modules in
// kernels/ops/), so that neither imports the other's module for them.
import type { BufferRef, OverrideConstants } from '../../gpu/pipelines';
import type { DispatchSpec } from '../../gpu/program';
import type { ModelConfig } from '../../numeric/types';
import type { OpStep, SlotWidth } from '../../ops/types';
import { slotWidth } from '../../ops/widths';
import { dfLinear } from './linear';

/** What a form of a step is given, whichever arithmetic it runs in (the WGSL reference's WgslArgs, DfArgs below). */
export interface FormArgs {
  /** The layer index (-1 at the top). */
  layer: number;
  step: OpStep;
  label: string;
  /** The buffers of the slots the step reads, in its order (df in a df form). */
  inputs: readonly GPUBuffer[];
  /** The step's weights on the GPU: `weight` and `bias` (null: none). */
  weight: GPUBuffer | null;
  bias: GPUBuffer | null;
  /** Token ids, u32 (the embedding). */
  ids: GPUBuffer;
  rope: { cos: GPUBuffer; sin: GPUBuffer };
  /**
   * A scratch buffer of at least n elements for an intermediate the form computes (by name; may be shared across
   * layers). In a df form, where the name is one of the step's `plan` ops (the attention core's `scores`, `probs`) and
   * the oracle keeps every tap, it is the layer's tap of that name.
   */
  scratch: (name: string, n: number) => GPUBuffer;
  dummy: GPUBuffer;
}

/**
 * What a df form is given: the config, the rows, the layer, its df inputs and output, and its weights. A step
 * computes the rows from..T−1 (`from` 0: every row; a run check's or a decode's rows otherwise): a row-wise form
 * over dfRows(a) rows, whose inputs hold those rows only; a whole-sequence op (the descriptor's `wholeSequence`)
 * reads every row of its inputs — the attention core computes the query rows from..T−1 over the keys of all T, the
 * rotary every row (its `from` is 0). The weights are f32, or the matrices packed f16 where `dfW` sets W_F16; the ids
 * are those of the rows from..T−1; rope's cos/sin are [T, rotary/2] df of the fp64 angles (ropeTablesF64 of the
 * family's inv_freq, split into pairs).
 */
export interface DfArgs extends FormArgs {
  cfg: ModelConfig;
  /** The positions of the sequence: the keys of the attention core, the rows of the rotary. */
  T: number;
  /** The first row the step computes (default 0); its output holds rows from..T−1 ([T − from, width]). */
  from?: number;
  /** The step's df output, [T − from, width] (or [heads, T, hd]; GPT-NeoX's rotary [3, H, T, hd]). */
  out: GPUBuffer;
  /**
   * Where the matrix comes in row chunks (the embedding, the LM head of a large vocabulary): `weight` holds rows
   * row0..row0+rows−1 of the whole (at byte `offset` on, `size` bytes, where the chunk is cut again into pieces),
   * and the LM head's output then has `rows` columns. Absent: the whole matrix.
   */
  weightRows?: { row0: number; rows: number; offset?: number; size?: number };
  /** DF_FMA (from the adapter's self-test), and W_F16 with it for the kernels that read weights. */
  df: OverrideConstants;
  dfW: OverrideConstants;
}

export type DfForm = (a: DfArgs) => DispatchSpec[];

/** The rows a step computes: from..T−1. */
export function dfRows(a: DfArgs): number {
  return a.T - (a.from ?? 0);
}

/** The step's weight, refused where the model has none (a df form's or a WGSL reference form's step). */
export function dfNeed(b: GPUBuffer | null, a: Pick<FormArgs, 'label' | 'step'>): GPUBuffer {
  if (!b) throw new Error(`${a.label}: '${a.step.op}' reads a weight the model has none of`);
  return b;
}

/** The step's weight as bound: the whole buffer, or the bytes of its rows' piece (DfArgs.weightRows). */
export function dfWeightRef(a: DfArgs): BufferRef {
  const w = dfNeed(a.weight, a);
  const r = a.weightRows;
  return r?.size === undefined ? w : { buffer: w, offset: r.offset ?? 0, size: r.size };
}

/**
 * x [R, K] · W^T (+ b) with W [N, K] over the step's rows: N the output slot's width (or the rows of W's chunk), K the
 * input's (`inWidth`).
 */
export function dfLinearForm(inWidth: SlotWidth): DfForm {
  return (a) => [
    dfLinear(
      a.label,
      { x: a.inputs[0], w: dfWeightRef(a), b: a.bias, y: a.out, dummy: a.dummy },
      dfRows(a),
      a.weightRows?.rows ?? slotWidth(a.cfg, a.step.width),
      slotWidth(a.cfg, inWidth),
      { constants: a.dfW },
    ),
  ];
}
