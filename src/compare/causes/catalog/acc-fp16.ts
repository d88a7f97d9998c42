// A product whose running sums are kept in fp16: every power-of-two K chunk tried, the step fused into one rounding
// or not.
import { type Cause, PRODUCT_OPS } from '../types';

export const accFp16: Cause = {
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
