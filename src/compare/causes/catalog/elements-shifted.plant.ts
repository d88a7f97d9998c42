import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'elements-shifted', op: 'dense', variant: () => ({ elemShift: 2 }), params: { shift: 2 } },
  { cause: 'elements-shifted', op: 'fc1', variant: () => ({ elemShift: -16 }), params: { shift: -16 } },
];
