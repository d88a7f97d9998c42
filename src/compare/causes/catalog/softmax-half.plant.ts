import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'softmax-fp16', op: 'attention', variant: () => ({ probsFormat: 'fp16' }) },
  { cause: 'softmax-bf16', op: 'attention', variant: () => ({ probsFormat: 'bf16' }) },
];
