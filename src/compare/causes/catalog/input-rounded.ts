// The input rounded to a narrower type before an exact product (or before a LayerNorm or GELU).
import type { NumFormat } from '../../../numeric/round';
import { type Cause, NORM_OPS, PRODUCT_OPS } from '../types';

const input = (f: NumFormat): Cause => ({
  id: `input-${f}`,
  family: 'narrower',
  ops: [...PRODUCT_OPS, ...NORM_OPS, 'act'],
  candidates: () => [{ params: { format: f }, variant: { inputFormat: f } }],
  words: (_, d) =>
    PRODUCT_OPS.includes(d.op)
      ? `the input is rounded to ${f} before an exact product`
      : `the input is rounded to ${f} before the op`,
});

export const inputBf16 = input('bf16');
export const inputFp16 = input('fp16');
