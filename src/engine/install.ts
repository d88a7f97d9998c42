// A parsed model onto the GPU, checked first: fp16 or fp32 storage of the large matrices, the memory budget,
// the tokenizer against the vocabulary, then the upload under error scopes (an out-of-memory or validation
// error becomes one EngineError and frees what was made). Engine.loadModel* install its result.

import { headDimProblem } from '../kernels/flash-attention';
import { ModelLoadError } from '../model/errors';
import { f16BitsToF32, f32ToF16Bits } from '../model/safetensors';
import { parseTokenizerText, type Tokenizer } from '../model/tokenizer';
import type { ModelWeights, NeoXConfig } from '../model/types';
import { modelSummary } from '../model/weights';
import { type GpuModel, uploadModel } from './gpu-model';
import { EngineError, type EngineOptions, type ModelInfo } from './types';

/** Weight bytes of the model on the GPU (matrices in fp16 or fp32; LayerNorms and biases in fp32). */
export function estimateWeightBytes(cfg: NeoXConfig, weightsF16: boolean): number {
  const { vocabSize: V, hiddenSize: d, intermediateSize: ff, numLayers: L } = cfg;
  const matrices = 2 * V * d + L * (4 * d * d + 2 * d * ff);
  const vectors = L * (3 * d + d + ff + d + 4 * d) + 2 * d;
  return matrices * (weightsF16 ? 2 : 4) + vectors * 4;
}

const AUTO_F16_BYTES = 512 * 2 ** 20;
/** A conservative default for what a browser tab may hold on the GPU; Node callers may raise it. */
export const DEFAULT_MEMORY_BUDGET = 4 * 2 ** 30;
const gib = (b: number) => (b / 2 ** 30).toFixed(2);

/**
 * fp16 weights on the GPU: when asked for ('fp16'), or ('auto') when the model is large (over 512 MB in
 * fp32) and every value of its matrices is exactly representable in fp16 (an fp16 checkpoint), so that
 * halving the memory loses nothing. When a checkpoint that
 * is not fp16 is forced to fp16, the CPU copy (the oracle's input) is rounded the same way, so both sides
 * compute with the same weights.
 */
function chooseF16Weights(asked: EngineOptions['weights'], cfg: NeoXConfig, w: ModelWeights): boolean {
  const mode = asked ?? 'auto';
  if (mode === 'fp32') return false;
  if (mode === 'auto' && estimateWeightBytes(cfg, false) <= AUTO_F16_BYTES) return false;
  const matrices = [
    w.embedIn,
    w.lmHead,
    ...w.layers.flatMap((l) => [l.qkv.weight, l.dense.weight, l.fc1.weight, l.fc2.weight]),
  ];
  const exact = matrices.every((t) =>
    t.data.every((v) => f16BitsToF32(f32ToF16Bits(v)) === v || Number.isNaN(v)),
  );
  if (mode === 'auto') return exact;
  if (!exact) for (const t of matrices) t.data.set(t.data.map((v) => f16BitsToF32(f32ToF16Bits(v))));
  return true;
}

/**
 * Checks a parsed model (storage, budget, tokenizer) and uploads it to `device`; nothing is allocated when a
 * check fails. `files` are the tokenizer text (none: the model takes token ids only) and the display name.
 */
export async function uploadChecked(
  device: GPUDevice,
  cfg: NeoXConfig,
  weights: ModelWeights,
  files: { tokenizer: string | undefined; name: string | undefined },
  opts: Pick<EngineOptions, 'weights' | 'memoryBudgetBytes'> & { maxBindingBytes: number },
): Promise<{ model: GpuModel; tok: Tokenizer | null; info: ModelInfo }> {
  const headDim = headDimProblem(cfg.headDim); // the widest head the attention kernels take
  if (headDim) throw new EngineError(`${headDim}; nothing was allocated`);
  const weightsF16 = chooseF16Weights(opts.weights, cfg, weights);
  const need = estimateWeightBytes(cfg, weightsF16);
  const budget = opts.memoryBudgetBytes ?? DEFAULT_MEMORY_BUDGET;
  if (need > budget) {
    throw new EngineError(
      `the model needs ${gib(need)} GiB of GPU memory for its weights${weightsF16 ? ' (in fp16)' : ''}, more than the ${gib(budget)} GiB budget for this adapter; nothing was allocated`,
    );
  }
  // Without a tokenizer description the model is driven by token ids alone.
  let tok: Tokenizer | null = null;
  if (files.tokenizer !== undefined) {
    tok = parseTokenizerText(files.tokenizer);
    if (tok.vocabSize > cfg.vocabSize) {
      throw new ModelLoadError(
        'tokenizer.json',
        `the tokenizer has ${tok.vocabSize} ids but the model's vocab_size is ${cfg.vocabSize}`,
      );
    }
  }
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  let gm: GpuModel | null = null;
  let thrown: unknown = null;
  try {
    gm = uploadModel(device, cfg, weights, opts.maxBindingBytes, weightsF16);
  } catch (e) {
    thrown = e;
  }
  const validation = await device.popErrorScope();
  const oom = await device.popErrorScope();
  const gpuErr = oom ?? validation;
  if (thrown || gpuErr || !gm) {
    gm?.destroy();
    if (thrown) throw new EngineError(`the model does not fit this adapter: ${(thrown as Error).message}`);
    throw new EngineError(`uploading the weights failed: ${gpuErr?.message ?? 'unknown error'}`);
  }
  const info: ModelInfo = {
    name: files.name ?? 'model',
    config: cfg,
    params: modelSummary(cfg).params,
    gpuBytes: gm.bytes,
    tokenizer: tok?.kind ?? 'token ids only',
    weightsOnGpu: weightsF16 ? 'fp16' : 'fp32',
  };
  return { model: gm, tok, info };
}
