import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'rotary-offset',
    op: 'attention',
    variant: (d) => ({ rotary: { positions: d.tokens.map((_, t) => (t < 5 ? t : t - 5)) } }),
    params: { from: 5, offset: -5 },
  },
];
