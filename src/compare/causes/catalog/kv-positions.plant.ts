import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  // a window of the last 4 keys over every row
  {
    cause: 'kv-positions-dropped',
    op: 'attention',
    variant: () => ({ keysDropped: { window: 4 } }),
    params: { window: 4, sink: 0 },
  },
  // a window of 3 with one sink key, at the decode steps (the last 3 rows) only
  {
    cause: 'kv-positions-dropped',
    op: 'attention',
    variant: (d) => ({
      keysDropped: { window: 3, sink: 1 },
      rows: { from: d.tokens.length - 3, to: d.tokens.length },
    }),
    params: { window: 3, sink: 1 },
    rowsFrom: (d) => d.tokens.length - 3,
  },
  // position 2 lost from the cache the decode steps read
  {
    cause: 'kv-positions-dropped',
    op: 'attention',
    variant: (d) => ({
      keysDropped: { positions: [2] },
      rows: { from: d.tokens.length - 4, to: d.tokens.length },
    }),
    params: { position: 2 },
    rowsFrom: (d) => d.tokens.length - 4,
  },
  // one cache slot lost (reads zeros) from the third-last row on
  {
    cause: 'kv-positions-dropped',
    op: 'attention',
    variant: (d) => ({ keysZeroed: [d.tokens.length - 3] }),
    params: { reads: 'zeros' },
  },
  // the decode steps read every cache slot one off (slot j holds position j − 1)
  {
    cause: 'kv-positions-moved',
    op: 'attention',
    variant: (d) => ({
      keysMoved: { shift: 1, from: 0 },
      rows: { from: d.tokens.length - 3, to: d.tokens.length },
    }),
    params: { shift: 1, from: 0 },
    rowsFrom: (d) => d.tokens.length - 3,
  },
  {
    cause: 'kv-positions-moved',
    op: 'attention',
    variant: (d) => ({ keysMoved: { shift: 1, from: d.tokens.length - 4 } }),
    params: { shift: 1 },
  },
];
