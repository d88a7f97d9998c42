// An online softmax that never rescales what it summed before a new maximum: the key block size and the number of
// partial states per row enumerated.
import { ATTENTION_OPS, type Cause } from '../types';

export const softmaxNoRescale: Cause = {
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
