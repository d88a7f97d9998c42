import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'input-bf16', op: 'qkv', variant: () => ({ inputFormat: 'bf16' }) },
  { cause: 'input-fp16', op: 'fc2', variant: () => ({ inputFormat: 'fp16' }) },
];
