import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'ln-eps', op: 'ln2', variant: () => ({ eps: 0.05 }), params: { eps: 0.05 }, approx: ['eps'] },
];
