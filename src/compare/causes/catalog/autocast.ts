// Autocast to half: inputs, weights, bias and output rounded to bf16 or fp16 around an fp32-accumulated product.
import type { NumFormat } from '../../../numeric/round';
import { type Cause, PRODUCT_OPS } from '../types';

const autocast = (f: NumFormat): Cause => ({
  id: `autocast-${f}`,
  family: 'narrower',
  ops: PRODUCT_OPS,
  candidates: () => [
    { params: { format: f }, variant: { inputFormat: f, weightFormat: f, biasFormat: f, outFormat: f } },
  ],
  words: () => `autocast to ${f}: inputs, weights, bias and output in ${f}, fp32 accumulation`,
});

export const autocastBf16 = autocast('bf16');
export const autocastFp16 = autocast('fp16');
