import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'output-bf16', op: 'fc1', variant: () => ({ outFormat: 'bf16' }) },
  { cause: 'output-fp16', op: 'attention', variant: () => ({ outFormat: 'fp16' }) },
  { cause: 'output-bf16', op: 'residual', variant: () => ({ outFormat: 'bf16' }) },
];
