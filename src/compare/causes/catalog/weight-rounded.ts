// The weights rounded to a narrower type before an exact product: a weight-only format.
import type { NumFormat } from '../../../numeric/round';
import { type Cause, PRODUCT_OPS } from '../types';

const weight = (f: NumFormat): Cause => ({
  id: `weight-${f}`,
  family: 'narrower',
  ops: PRODUCT_OPS,
  candidates: () => [{ params: { format: f }, variant: { weightFormat: f } }],
  words: () => `the weights are rounded to ${f} (a weight-only format)`,
});

export const weightBf16 = weight('bf16');
export const weightFp16 = weight('fp16');
