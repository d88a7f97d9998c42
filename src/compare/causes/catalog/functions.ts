// Function variants: GELU by its tanh or sigmoid approximations, ReLU or SiLU in its place; softmax probabilities in
// half precision; an online softmax that never rescales what it summed before a new maximum.
import type { NumFormat } from '../../../numeric/round';
import { ACT_OPS, type ActFn, ATTENTION_OPS, type Cause } from '../types';

const act = (fn: ActFn, words: string): Cause => ({
  id: fn,
  family: 'function',
  ops: ACT_OPS,
  candidates: () => [{ params: {}, variant: { act: fn } }],
  words: () => words,
});

const softmaxHalf = (f: NumFormat): Cause => ({
  id: `softmax-${f}`,
  family: 'function',
  ops: ATTENTION_OPS,
  candidates: () => [{ params: { format: f }, variant: { probsFormat: f } }],
  words: () => `the softmax probabilities are rounded to ${f} before the value product`,
});

const noRescale: Cause = {
  id: 'softmax-no-rescale',
  family: 'function',
  ops: ATTENTION_OPS,
  candidates: (s) => {
    const T = s.data.tokens.length;
    return [2, 4, 8, 16, 32, 64, 128]
      .filter((b) => b < T)
      .map((block) => ({ params: { block }, variant: { noRescaleBlock: block } }));
  },
  words: (p) =>
    `an online softmax over key blocks of ${p.block} never rescales its running sum and output when the maximum grows`,
};

export const FUNCTIONS: readonly Cause[] = [
  act('gelu-tanh', "GELU by its tanh approximation (HF's gelu_new) instead of the exact erf form"),
  act('gelu-sigmoid', 'GELU by its sigmoid approximation, x·σ(1.702x)'),
  act('relu', 'ReLU in place of GELU'),
  act('silu', 'SiLU in place of GELU'),
  softmaxHalf('fp16'),
  softmaxHalf('bf16'),
  noRescale,
];
