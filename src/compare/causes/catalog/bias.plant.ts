import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  // dense_4h_to_h with the residual sum, checked whole
  { cause: 'bias-dropped', op: 'mlp_residual', variant: () => ({ bias: 0 }) },
  { cause: 'bias-dropped', op: 'fc2', variant: () => ({ bias: 0 }) },
  { cause: 'bias-doubled', op: 'qkv', variant: () => ({ bias: 2 }) },
];
