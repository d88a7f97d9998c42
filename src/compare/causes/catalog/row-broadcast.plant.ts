import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  { cause: 'row-broadcast', op: 'ln2', variant: () => ({ broadcastRow: 3 }), params: { row: 3 } },
];
