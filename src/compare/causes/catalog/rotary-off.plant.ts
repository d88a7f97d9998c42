import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'rotary-off-q', op: 'attention', variant: () => ({ rotaryOff: 'q' }) },
  {
    cause: 'rotary-off-k',
    op: 'attention',
    variant: (d) => ({ rotaryOff: 'k', rows: { from: d.tokens.length - 3, to: d.tokens.length } }),
    rowsFrom: (d) => d.tokens.length - 3,
  },
];
