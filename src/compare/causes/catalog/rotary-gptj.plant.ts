import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  // the QKV projection with the attention core, checked whole
  { cause: 'rotary-gptj', op: 'attn_block', variant: () => ({ rotary: { gptj: true } }) },
  { cause: 'rotary-gptj', op: 'attention', variant: () => ({ rotary: { gptj: true } }) },
];
