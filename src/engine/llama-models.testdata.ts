// Random Llama-family models for the GPU forwards' tests: every feature of the family drawn at random (GQA and MQA
// ratios, head dims that are multiples of no tile, 1 or 2 layers, a sliding window per layer, rope scaling, biases,
// q/k norms, tied embeddings), as kernels/cpu/llama-forward-props.test.ts draws them for the fp64 forward.

import { smallLlamaConfig } from '../model/llama-config';
import { randomLlamaTensors } from '../model/llama-random';
import { loadLlamaWeights } from '../model/llama-weights';
import { writeSafetensors } from '../model/safetensors-write';
import { mulberry32 } from '../numeric/random';
import type { LlamaConfig, LlamaWeights, RopeScaling } from '../numeric/types';

/** The ranges a random model is drawn from (smaller ones keep an fp64 test over many seeds quick). */
export interface LlamaDraw {
  headDims: readonly number[];
  /** T is drawn from 1 … maxT. */
  maxT: number;
  /** The vocabulary is drawn from 11 … 11 + vocabSpan − 1. */
  vocabSpan: number;
  hiddenSizes: readonly number[];
  intermediateSizes: readonly number[];
}

export const GPU_DRAW: LlamaDraw = {
  headDims: [4, 6, 10, 18],
  maxT: 19,
  vocabSpan: 90,
  hiddenSizes: [6, 22, 37],
  intermediateSizes: [5, 19, 41],
};

/** A random model drawing every feature of the family within `draw`'s ranges. */
export function randomLlamaModel(
  seed: number,
  draw: LlamaDraw = GPU_DRAW,
): { cfg: LlamaConfig; w: LlamaWeights; tokens: number[] } {
  const r = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const numKvHeads = pick([1, 2, 3]);
  const numHeads = numKvHeads * pick([1, 2, 3]);
  const headDim = pick(draw.headDims);
  const numLayers = pick([1, 2]);
  const T = 1 + Math.floor(r() * draw.maxT);
  const flavour = pick(['llama', 'qwen2', 'qwen3', 'mistral'] as const);
  const scaling: RopeScaling = pick([
    { type: 'default' },
    { type: 'linear', factor: 2.5 },
    { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 16 },
  ] as RopeScaling[]);
  const cfg = smallLlamaConfig({
    flavour,
    vocabSize: 11 + Math.floor(r() * draw.vocabSpan),
    hiddenSize: pick(draw.hiddenSizes),
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    rotaryDim: headDim,
    intermediateSize: pick(draw.intermediateSizes),
    ropeTheta: pick([100, 10000, 1e6]),
    ropeScaling: scaling,
    attentionBias: flavour === 'qwen2' || r() < 0.3,
    oProjBias: flavour !== 'qwen2' && flavour !== 'mistral' && r() < 0.3,
    mlpBias: flavour === 'llama' && r() < 0.3,
    qkNorm: flavour === 'qwen3',
    slidingWindow: Array.from({ length: numLayers }, () =>
      r() < 0.5 ? null : 1 + Math.floor(r() * (T + 2)),
    ),
    tieWordEmbeddings: r() < 0.3,
  });
  const w = loadLlamaWeights(cfg, writeSafetensors(randomLlamaTensors(cfg, seed)));
  const tokens = Array.from({ length: T }, () => Math.floor(r() * cfg.vocabSize));
  return { cfg, w, tokens };
}
