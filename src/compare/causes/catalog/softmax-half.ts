// The softmax probabilities rounded to half (fp16 or bf16) before the value product.
import type { NumFormat } from '../../../numeric/round';
import { ATTENTION_OPS, type Cause } from '../types';

const softmaxHalf = (f: NumFormat): Cause => ({
  id: `softmax-${f}`,
  family: 'function',
  ops: ATTENTION_OPS,
  candidates: () => [{ params: { format: f }, variant: { probsFormat: f } }],
  words: () => `the softmax probabilities are rounded to ${f} before the value product`,
});

export const softmaxFp16 = softmaxHalf('fp16');
export const softmaxBf16 = softmaxHalf('bf16');
