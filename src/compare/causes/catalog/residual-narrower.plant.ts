import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'residual-term-rounded',
    op: 'residual',
    variant: () => ({ termFormat: { term: 0, format: 'bf16' } }),
    params: { term: 'layers.1.mlp_out', format: 'bf16' },
  },
  {
    cause: 'residual-sum-half',
    op: 'residual',
    variant: () => ({ sumFormat: 'fp16' }),
    params: { format: 'fp16' },
  },
];
