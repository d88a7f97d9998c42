import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'acc-fp16',
    op: 'fc2',
    variant: () => ({ acc: { chunk: 16, fused: true } }),
    params: { chunk: 16 },
  },
  // dense_h_to_4h with its GELU, checked whole; no K split
  {
    cause: 'acc-fp16',
    op: 'mlp_up',
    variant: (d) => ({ acc: { chunk: d.inputs[0].length / d.tokens.length, fused: false } }),
  },
  // a half FMA's accumulator, each step rounded once (on small ops mostly the same as through f32)
  {
    cause: 'acc-fp16',
    op: 'dense',
    variant: (d) => ({ acc: { chunk: d.inputs[0].length / d.tokens.length, fused: true, half: true } }),
  },
  // a decode GEMV's fp16 accumulator (the last 3 rows)
  {
    cause: 'acc-fp16',
    op: 'fc1',
    variant: (d) => ({
      acc: { chunk: d.inputs[0].length / d.tokens.length, fused: true },
      rows: { from: d.tokens.length - 3, to: d.tokens.length },
    }),
    rowsFrom: (d) => d.tokens.length - 3,
  },
];
