import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'rotary-width', op: 'attention', variant: (d) => ({ rotaryNdims: d.cfg.rotaryNdims - 2 }) },
];
