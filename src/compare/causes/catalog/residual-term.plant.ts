import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'residual-term-dropped',
    op: 'residual',
    variant: () => ({ coefs: [1, 0, 1] }),
    params: { term: 'layers.1.attn_out' },
  },
  {
    cause: 'residual-term-doubled',
    op: 'residual',
    variant: () => ({ coefs: [2, 1, 1] }),
    params: { term: 'layers.1.mlp_out' },
  },
  // a decode kernel's epilogue without the attention term (the last 4 rows)
  {
    cause: 'residual-term-dropped',
    op: 'residual',
    variant: (d) => ({ coefs: [1, 0, 1], rows: { from: d.tokens.length - 4, to: d.tokens.length } }),
    params: { term: 'layers.1.attn_out' },
    rowsFrom: (d) => d.tokens.length - 4,
  },
];
