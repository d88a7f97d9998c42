import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'weight-transposed', op: 'dense', variant: () => ({ transposed: true }) },
];
