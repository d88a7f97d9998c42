import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'tf32', op: 'qkv', variant: () => ({ inputFormat: 'tf32', weightFormat: 'tf32' }) },
];
