import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'causal-off-by-one',
    op: 'attention',
    variant: () => ({ scores: { causalOffset: 1 } }),
    params: { offset: 1 },
  },
];
