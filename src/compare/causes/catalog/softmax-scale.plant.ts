import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'softmax-scale',
    op: 'attention',
    variant: () => ({ scores: { scale: 1 } }),
    params: { scale: 1 },
    approx: ['scale'],
  },
  { cause: 'softmax-scale', op: 'attention', variant: (d) => ({ scores: { scale: 1 / d.cfg.headDim } }) },
  // a decode kernel's scale (the last 3 rows), the prefill's right
  {
    cause: 'softmax-scale',
    op: 'attention',
    variant: (d) => ({ scores: { scale: 1 }, rows: { from: d.tokens.length - 3, to: d.tokens.length } }),
    params: { scale: 1 },
    approx: ['scale'],
    rowsFrom: (d) => d.tokens.length - 3,
  },
];
