import type { Plant } from '../plant.testdata';

const decode = (T: number) => ({ from: T - 4, to: T });

export const PLANTS: Plant[] = [
  { cause: 'kv-cache-fp16', op: 'attention', variant: () => ({ kvFormat: 'fp16' }) },
  // read from the cache by the decode steps only (the last four rows), the prompt's rows attending exactly
  {
    cause: 'kv-cache-bf16',
    op: 'attention',
    variant: (d) => ({ kvFormat: 'bf16', rows: decode(d.tokens.length) }),
    rowsFrom: (d) => d.tokens.length - 4,
  },
];
