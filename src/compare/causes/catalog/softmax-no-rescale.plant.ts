import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  // the QKV projection with the attention core, checked whole
  {
    cause: 'softmax-no-rescale',
    op: 'attn_block',
    variant: () => ({ noRescale: { block: 4, threads: 1 } }),
    params: { block: 4 },
  },
  {
    cause: 'softmax-no-rescale',
    op: 'attention',
    variant: () => ({ noRescale: { block: 2, threads: 2 } }),
    params: { block: 2, threads: 2 },
  },
];
