import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'rotary-base',
    op: 'attention',
    variant: () => ({ rotaryBase: 500 }),
    params: { base: 500 },
    approx: ['base'],
  },
];
