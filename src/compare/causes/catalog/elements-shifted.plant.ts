import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'elements-shifted', op: 'dense', variant: () => ({ elemShift: 2 }), params: { shift: 2 } },
];
