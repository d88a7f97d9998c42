import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'autocast-bf16',
    op: 'fc2',
    variant: () => ({ inputFormat: 'bf16', weightFormat: 'bf16', biasFormat: 'bf16', outFormat: 'bf16' }),
  },
  {
    cause: 'autocast-fp16',
    op: 'lm_head',
    variant: () => ({ inputFormat: 'fp16', weightFormat: 'fp16', outFormat: 'fp16' }),
  },
];
