import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'input-bf16', op: 'qkv', variant: () => ({ inputFormat: 'bf16' }) },
  { cause: 'input-fp16', op: 'fc2', variant: () => ({ inputFormat: 'fp16' }) },
  // a tile of rows (4–7) read through half
  {
    cause: 'input-fp16',
    op: 'fc1',
    variant: () => ({ inputFormat: 'fp16', rows: { from: 4, to: 8 } }),
    rowsFrom: () => 4,
  },
];
