// The weights the GPU double-float oracle reads (oracle-gpu.ts), by the registry steps' `weight` names
// (src/ops/families.ts): GPT-NeoX's from the model's own upload (gpu-model.ts: the matrices packed f16 where the
// checkpoint is half, W_F16; the embedding and the LM head in row chunks), any family's from f32 buffers of its
// weight tensors (the Llama reference forward's upload, LlamaReference.weightBuffer): nothing is uploaded twice.
import type { LinearWeights, ModelConfig, Tensor } from '../numeric/types';
import type { OpStep } from '../ops/types';
import {
  type GpuLayer,
  type GpuLinear,
  type GpuModel,
  type GpuNorm,
  ROW_GRANULE,
  type RowChunk,
} from './gpu-model';
import { OracleError } from './oracle-df';

/** A step's weight and bias on the GPU (null: it reads none). */
export interface StepWeights {
  weight: GPUBuffer | null;
  bias: GPUBuffer | null;
}

export interface OracleWeightSource {
  cfg: ModelConfig;
  /** The matrices (linears, embedding, LM head) packed f16 (W_F16); norms and biases are f32. */
  f16: boolean;
  /** A step's weight and bias (layer −1: the model's own); throws naming a weight the model lacks. */
  of(step: OpStep, layer: number): StepWeights;
  /** The [V, d] matrix of the embedding or the LM head in row chunks, each its own buffer. */
  chunks(step: OpStep): readonly RowChunk[];
  /** A 16-byte buffer bound where a kernel's optional input is absent (null: the oracle uploads one). */
  dummy: GPUBuffer | null;
  /** Rows of an LM-head piece are a multiple of this: a piece's byte offset into its chunk is 256-byte aligned. */
  rowGranule: number;
}

const NONE: StepWeights = { weight: null, bias: null };

/** GPT-NeoX's layer weights on the GPU by the steps' weight names. */
const NEOX_LAYER: Readonly<Record<string, (l: GpuLayer) => GpuLinear | GpuNorm>> = {
  inputLayernorm: (l) => l.inputLayernorm,
  postAttentionLayernorm: (l) => l.postAttentionLayernorm,
  qkv: (l) => l.attention.qkv,
  dense: (l) => l.attention.dense,
  fc1: (l) => l.mlp.denseHTo4h,
  fc2: (l) => l.mlp.dense4hToH,
};

/** GPT-NeoX's model on the GPU (uploadModel) as the oracle's weights. */
export function gpuModelWeights(m: GpuModel): OracleWeightSource {
  const chunked: Readonly<Record<string, readonly RowChunk[]>> = { embedIn: m.embedIn, lmHead: m.lmHead };
  return {
    cfg: m.cfg,
    f16: m.weightsF16,
    dummy: m.dummy,
    rowGranule: ROW_GRANULE,
    of: (step, layer) => {
      if (!step.weight) return NONE;
      const w =
        layer < 0
          ? step.weight === 'finalLayerNorm'
            ? m.finalLayerNorm
            : undefined
          : NEOX_LAYER[step.weight]?.(m.layers[layer]);
      if (!w) throw new OracleError(`oracle ${step.slot}: the model on the GPU has no '${step.weight}'`);
      return { weight: w.weight, bias: w.bias };
    },
    chunks: (step) => {
      const c = step.weight ? chunked[step.weight] : undefined;
      if (!c) throw new OracleError(`oracle ${step.slot}: '${step.weight}' is no matrix in row chunks`);
      return c;
    },
  };
}

/** A family's weights (LlamaWeights, ModelWeights): model-level fields by the steps' `weight` names, and `layers`. */
export interface OracleWeights {
  layers: readonly object[];
}

/** The f32 GPU buffer of a weight tensor (the reference forward's upload). */
export type WeightBuffers = (t: Tensor) => GPUBuffer | null;

/** Any family's weights as f32 buffers of its tensors (the embedding and the LM head one chunk of V rows each). */
export function tensorWeights(cfg: ModelConfig, w: OracleWeights, buffer: WeightBuffers): OracleWeightSource {
  const field = (owner: object, s: OpStep) => {
    const v = (owner as Record<string, unknown>)[s.weight as string] as
      | Tensor
      | LinearWeights
      | null
      | undefined;
    if (!v) throw new OracleError(`oracle ${s.slot}: the weights have no '${s.weight}'`);
    return v;
  };
  const buf = (t: Tensor, s: OpStep) => {
    const b = buffer(t);
    if (!b) throw new OracleError(`oracle ${s.slot}: weight '${s.weight}' is not on the GPU`);
    return b;
  };
  const of = (step: OpStep, layer: number): StepWeights => {
    if (!step.weight) return NONE;
    const v = field(layer < 0 ? w : w.layers[layer], step);
    if ('weight' in v) return { weight: buf(v.weight, step), bias: v.bias ? buf(v.bias, step) : null };
    return { weight: buf(v, step), bias: null };
  };
  return {
    cfg,
    f16: false,
    dummy: null,
    rowGranule: 64, // 64 rows of f32: 256 · d bytes
    of,
    chunks: (step) => [{ buffer: of(step, -1).weight as GPUBuffer, row0: 0, rows: cfg.vocabSize }],
  };
}
