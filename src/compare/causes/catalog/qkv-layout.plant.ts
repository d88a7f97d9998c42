import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'qkv-layout', op: 'attention', variant: () => ({ rotary: { layout3: true } }) },
];
