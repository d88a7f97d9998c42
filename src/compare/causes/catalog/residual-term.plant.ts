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
];
