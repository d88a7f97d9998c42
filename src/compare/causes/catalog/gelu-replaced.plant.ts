import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  // dense_h_to_4h with its GELU, checked whole
  { cause: 'relu', op: 'mlp_up', variant: () => ({ act: 'relu' }) },
  { cause: 'gelu-tanh', op: 'act', variant: () => ({ act: 'gelu-tanh' }) },
  { cause: 'gelu-sigmoid', op: 'act', variant: () => ({ act: 'gelu-sigmoid' }) },
  { cause: 'relu', op: 'act', variant: () => ({ act: 'relu' }) },
  { cause: 'silu', op: 'act', variant: () => ({ act: 'silu' }) },
  // a decode kernel's tanh GELU (the last 4 rows), the prompt's exact
  {
    cause: 'gelu-tanh',
    op: 'act',
    variant: (d) => ({ act: 'gelu-tanh', rows: { from: d.tokens.length - 4, to: d.tokens.length } }),
    rowsFrom: (d) => d.tokens.length - 4,
  },
];
