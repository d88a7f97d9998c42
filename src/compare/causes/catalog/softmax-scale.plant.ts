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
];
