import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'ln-unbiased-var', op: 'final_norm', variant: () => ({ norm: { unbiased: true } }) },
];
