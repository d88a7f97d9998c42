import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'attention-bf16',
    op: 'attention',
    variant: () => ({ qkvFormat: 'bf16' }),
    params: { where: 'q, k, v' },
  },
  {
    cause: 'attention-fp16',
    op: 'attention',
    variant: () => ({ qkvFormat: 'fp16', outFormat: 'fp16' }),
    params: { where: 'q, k, v and output' },
  },
  {
    cause: 'attention-fp16',
    op: 'attention',
    variant: () => ({ scoresFormat: 'fp16' }),
    params: { where: 'scores' },
  },
];
