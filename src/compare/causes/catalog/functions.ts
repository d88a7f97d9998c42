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
    // Key blocks of every power of two below T, one running state per row or several (a flash kernel that deals a
    // row's blocks to several threads); several states only where a row has more blocks than states.
    const T = s.data.tokens.length;
    const out = [];
    for (const block of [2, 4, 8, 16, 32, 64, 128].filter((b) => b < T))
      for (const threads of [1, 2, 3, 4, 8].filter((g) => g === 1 || block * g < T))
        out.push({ params: { block, threads }, variant: { noRescale: { block, threads } } });
    return out;
  },
  words: (p) =>
    `an online softmax over key blocks of ${p.block}${Number(p.threads) > 1 ? ` (dealt to ${p.threads} partial states per row)` : ''} never rescales its running sum and output when the maximum grows`,
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
