import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'output-bf16', op: 'fc1', variant: () => ({ outFormat: 'bf16' }) },
  { cause: 'output-fp16', op: 'attention', variant: () => ({ outFormat: 'fp16' }) },
  { cause: 'output-bf16', op: 'residual', variant: () => ({ outFormat: 'bf16' }) },
  // one position stored in half
  {
    cause: 'output-fp16',
    op: 'fc2',
    variant: () => ({ outFormat: 'fp16', rows: { from: 6, to: 7 } }),
    rowsFrom: () => 6,
  },
];
