import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'weight-bf16', op: 'dense', variant: () => ({ weightFormat: 'bf16' }) },
  { cause: 'weight-fp16', op: 'fc1', variant: () => ({ weightFormat: 'fp16' }) },
];
