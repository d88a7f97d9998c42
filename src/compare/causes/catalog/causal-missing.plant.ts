import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'causal-missing', op: 'attention', variant: () => ({ scores: { causalOffset: null } }) },
];
