import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'input-wrong-tensor',
    op: 'dense',
    variant: (d) => ({ input: d.others.find((o) => o.slot === 'layers.1.attn_out')!.data }),
    params: { from: 'layers.1.attn_out' },
  },
];
