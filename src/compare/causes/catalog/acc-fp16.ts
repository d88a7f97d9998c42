// A product whose running sums are kept in fp16: every power-of-two K chunk tried, the step fused into one rounding
// (from f32, as an emulation on f32 arithmetic rounds, or from the exact value, as a half-precision FMA does) or not.
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
    // (fma: the step through f32, then fp16, as an f32 emulation rounds; fma16: once, as a half FMA does)
    return chunks.flatMap((chunk) => [
      { params: { chunk, fused: 'fma' }, variant: { acc: { chunk, fused: true } } },
      { params: { chunk, fused: 'mul+add' }, variant: { acc: { chunk, fused: false } } },
      // (a half FMA's sums: the GEMV of a decode step, no split)
      ...(chunk === K
        ? [{ params: { chunk, fused: 'fma16' }, variant: { acc: { chunk, fused: true, half: true } } }]
        : []),
    ]);
  },
  words: (p, d) => {
    const K = d.inputs[0].length / d.tokens.length;
    return `the running sums are kept in fp16 (a narrower accumulator${Number(p.chunk) < K ? `, K split in chunks of ${p.chunk}` : ''})`;
  },
};
