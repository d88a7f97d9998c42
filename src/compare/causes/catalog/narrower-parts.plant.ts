import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'parts-bf16',
    op: 'fc1',
    variant: () => ({ inputFormat: 'bf16', weightFormat: 'bf16', biasFormat: 'bf16' }),
    params: { parts: 'input and weights' },
  },
  {
    cause: 'parts-fp16',
    op: 'ln2',
    variant: () => ({ inputFormat: 'fp16', outFormat: 'fp16' }),
    params: { parts: 'input and output' },
  },
  {
    cause: 'parts-fp16',
    op: 'dense',
    variant: () => ({ weightFormat: 'fp16', biasFormat: 'fp16', outFormat: 'fp16' }),
    params: { parts: 'weights and output' },
  },
];
