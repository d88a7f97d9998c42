import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'heads-permuted',
    op: 'attention',
    variant: (d) => ({ headPerm: Array.from({ length: d.cfg.numHeads }, (_, h) => d.cfg.numHeads - 1 - h) }),
  },
];
