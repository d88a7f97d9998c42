// Narrower arithmetic: the output rounded to bf16 or fp16; the inputs and/or the weights rounded before an exact
// product (autocast, TF32, weight-only formats).
import type { NumFormat } from '../../../numeric/round';
import { ALL_OPS, type Cause, NORM_OPS, PRODUCT_OPS } from '../types';

const output = (f: NumFormat): Cause => ({
  id: `output-${f}`,
  family: 'narrower',
  ops: ALL_OPS,
  candidates: () => [{ params: { format: f }, variant: { outFormat: f } }],
  words: () => `the output is rounded to ${f}`,
});

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

const weight = (f: NumFormat): Cause => ({
  id: `weight-${f}`,
  family: 'narrower',
  ops: PRODUCT_OPS,
  candidates: () => [{ params: { format: f }, variant: { weightFormat: f } }],
  words: () => `the weights are rounded to ${f} (a weight-only format)`,
});

const tf32: Cause = {
  id: 'tf32',
  family: 'narrower',
  ops: PRODUCT_OPS,
  candidates: () => [{ params: {}, variant: { inputFormat: 'tf32', weightFormat: 'tf32' } }],
  words: () => 'the product runs in TF32 (inputs and weights rounded to tf32, fp32 accumulation)',
};

const autocast = (f: NumFormat): Cause => ({
  id: `autocast-${f}`,
  family: 'narrower',
  ops: PRODUCT_OPS,
  candidates: () => [
    { params: { format: f }, variant: { inputFormat: f, weightFormat: f, biasFormat: f, outFormat: f } },
  ],
  words: () => `autocast to ${f}: inputs, weights, bias and output in ${f}, fp32 accumulation`,
});

const accF16: Cause = {
  id: 'acc-fp16',
  family: 'narrower',
  ops: PRODUCT_OPS,
  // Each step rounded: a sixteenth of the screening sample (an exact emulation matches every element anyway).
  screenShare: 1 / 16,
  candidates: (s) => {
    // The K partition is unknown: no split, and chunks of every power of two from 16 below K; the step fused
    // into one rounding or not.
    const K = s.data.inputs[0].length / s.data.tokens.length;
    const chunks = [K];
    for (let c = 16; c < K; c *= 2) chunks.push(c);
    return chunks.flatMap((chunk) =>
      [true, false].map((fused) => ({
        params: { chunk, fused: fused ? 'fma' : 'mul+add' },
        variant: { acc: { chunk, fused } },
      })),
    );
  },
  words: (p, d) => {
    const K = d.inputs[0].length / d.tokens.length;
    return `the running sums are kept in fp16 (a narrower accumulator${Number(p.chunk) < K ? `, K split in chunks of ${p.chunk}` : ''})`;
  },
};

export const NARROWER: readonly Cause[] = [
  output('bf16'),
  output('fp16'),
  input('bf16'),
  input('fp16'),
  weight('bf16'),
  weight('fp16'),
  tf32,
  autocast('bf16'),
  autocast('fp16'),
  accF16,
];
