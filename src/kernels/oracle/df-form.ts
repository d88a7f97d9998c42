// What a double-float form is given (DfArgs) and the form every linear op kind shares: the types the df forms of the
// registry's ops are written against, wherever they live (kernels/oracle/df-forms.ts's table, the per-op modules in
// kernels/ops/), so that neither imports the other's module for them.
import type { OverrideConstants } from '../../gpu/pipelines';
import type { DispatchSpec } from '../../gpu/program';
import type { ModelConfig } from '../../numeric/types';
import type { OpStep, SlotWidth } from '../../ops/types';
import { dfLinear } from './linear';

/** What a df form is given: the config, the rows, the layer, its df inputs and output, and its weights. */
export interface DfArgs {
  cfg: ModelConfig;
  T: number;
  /** The layer index (-1 at the top). */
  layer: number;
  step: OpStep;
  label: string;
  /** The df buffers of the slots the step reads, in its order. */
  inputs: readonly GPUBuffer[];
  /** The step's df output, [T, width] (or [heads, T, hd]; GPT-NeoX's rotary [3, H, T, hd]). */
  out: GPUBuffer;
  /** The step's weights on the GPU, f32 (null: none). */
  weight: GPUBuffer | null;
  bias: GPUBuffer | null;
  /** Token ids [T] u32 (the embedding). */
  ids: GPUBuffer;
  /** cos/sin [T, rotary/2] df of the fp64 angles (ropeTablesF64 of the family's inv_freq, split into pairs). */
  rope: { cos: GPUBuffer; sin: GPUBuffer };
  /** A df scratch buffer of at least n elements (by name; may be shared across layers). */
  scratch: (name: string, n: number) => GPUBuffer;
  dummy: GPUBuffer;
  /** DF_FMA (from the adapter's self-test), and W_F16 with it for the kernels that read weights. */
  df: OverrideConstants;
  dfW: OverrideConstants;
}

export type DfForm = (a: DfArgs) => DispatchSpec[];

export function dfNeed(b: GPUBuffer | null, a: DfArgs): GPUBuffer {
  if (!b) throw new Error(`${a.label}: '${a.step.op}' reads a weight the model has none of`);
  return b;
}

/** Values per row of a slot of `width` (heads layouts: heads · hd). */
export function dfSlotWidth(cfg: ModelConfig, width: SlotWidth): number {
  const d = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.family === 'llama' ? cfg.numKvHeads * cfg.headDim : q;
  const per: Record<SlotWidth, number> = {
    hidden: d,
    qkv: 3 * d,
    q,
    kv,
    ff: cfg.intermediateSize,
    vocab: cfg.vocabSize,
    q_heads: q,
    kv_heads: kv,
    qkv_heads: 3 * d,
  };
  return per[width];
}

/** x [T, K] · W^T (+ b) with W [N, K]: N the output slot's width, K the input's (`inWidth`). */
export function dfLinearForm(inWidth: SlotWidth): DfForm {
  return (a) => [
    dfLinear(
      a.label,
      { x: a.inputs[0], w: dfNeed(a.weight, a), b: a.bias, y: a.out, dummy: a.dummy },
      a.T,
      dfSlotWidth(a.cfg, a.step.width),
      dfSlotWidth(a.cfg, inWidth),
      { constants: a.dfW },
    ),
  ];
}
