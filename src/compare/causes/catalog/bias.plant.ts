import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  // dense_4h_to_h with the residual sum, checked whole
  { cause: 'bias-dropped', op: 'mlp_residual', variant: () => ({ bias: 0 }) },
  { cause: 'bias-dropped', op: 'fc2', variant: () => ({ bias: 0 }) },
  { cause: 'bias-doubled', op: 'qkv', variant: () => ({ bias: 2 }) },
  // a decode kernel without the bias (the last 2 rows)
  {
    cause: 'bias-dropped',
    op: 'dense',
    variant: (d) => ({ bias: 0, rows: { from: d.tokens.length - 2, to: d.tokens.length } }),
    rowsFrom: (d) => d.tokens.length - 2,
  },
];
