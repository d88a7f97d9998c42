// The output rounded to a narrower type (bf16 or fp16) on its way to memory: a half-precision store.
import type { NumFormat } from '../../../numeric/round';
import { ALL_OPS, type Cause } from '../types';

const output = (f: NumFormat): Cause => ({
  id: `output-${f}`,
  family: 'narrower',
  ops: ALL_OPS,
  candidates: () => [{ params: { format: f }, variant: { outFormat: f } }],
  words: () => `the output is rounded to ${f}`,
});

export const outputBf16 = output('bf16');
export const outputFp16 = output('fp16');
