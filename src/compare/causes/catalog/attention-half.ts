// The attention core run on a narrower type: its inputs q, k (after rotary) and v in half with fp32 inside (its
// output kept in fp32, or in half too: the whole kernel in half), or the scaled scores rounded to half before the
// softmax (a score product written in half).
import type { NumFormat } from '../../../numeric/round';
import { ATTENTION_OPS, type Cause } from '../types';

const half = (f: NumFormat): Cause => ({
  id: `attention-${f}`,
  family: 'narrower',
  ops: ATTENTION_OPS,
  candidates: () => [
    { params: { format: f, where: 'q, k, v' }, variant: { qkvFormat: f } },
    { params: { format: f, where: 'q, k, v and output' }, variant: { qkvFormat: f, outFormat: f } },
    { params: { format: f, where: 'scores' }, variant: { scoresFormat: f } },
  ],
  words: (p) =>
    p.where === 'scores'
      ? `the attention scores are rounded to ${p.format} before the softmax`
      : p.where === 'q, k, v'
        ? `the attention runs on ${p.format} inputs (q, k after rotary, v rounded; fp32 inside)`
        : `the attention runs in ${p.format} (q, k, v and its output rounded; fp32 inside)`,
});

export const attentionFp16 = half('fp16');
export const attentionBf16 = half('bf16');
