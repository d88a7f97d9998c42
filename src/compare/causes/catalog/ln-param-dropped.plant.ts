import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'ln-weight-dropped', op: 'ln1', variant: () => ({ norm: { noWeight: true } }) },
  { cause: 'ln-bias-dropped', op: 'final_norm', variant: () => ({ norm: { noBias: true } }) },
];
