import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'rows-shifted',
    op: 'fc1',
    variant: () => ({ rowShift: { shift: 1, from: 4 } }),
    params: { shift: 1, from: 4 },
  },
  {
    cause: 'rows-shifted',
    op: 'attention',
    variant: () => ({ rowShift: { shift: -2, from: 0 } }),
    params: { shift: -2, from: 0 },
  },
  // past the enumerated shifts: found from the last row
  {
    cause: 'rows-shifted',
    op: 'dense',
    variant: () => ({ rowShift: { shift: 6, from: 2 } }),
    params: { shift: 6, from: 2 },
  },
];
