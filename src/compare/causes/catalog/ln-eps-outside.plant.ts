import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'ln-eps-outside',
    op: 'ln1',
    variant: () => ({ eps: 0.01, norm: { epsOutside: true } }),
    params: { eps: 0.01 },
    approx: ['eps'],
  },
];
