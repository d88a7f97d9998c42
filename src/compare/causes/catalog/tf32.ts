// A product in TF32: inputs and weights rounded to tf32, the sums in fp32.
import { type Cause, PRODUCT_OPS } from '../types';

export const tf32: Cause = {
  id: 'tf32',
  family: 'narrower',
  ops: PRODUCT_OPS,
  candidates: () => [{ params: {}, variant: { inputFormat: 'tf32', weightFormat: 'tf32' } }],
  words: () => 'the product runs in TF32 (inputs and weights rounded to tf32, fp32 accumulation)',
};
