// Each input row of a product read s elements along: a tile loaded from the wrong offset.
import { type Cause, PRODUCT_OPS } from '../types';

export const inputShifted: Cause = {
  id: 'input-shifted',
  family: 'layout',
  ops: PRODUCT_OPS,
  candidates: () =>
    [1, 2, 3, 4, -1, -2].map((shift) => ({ params: { shift }, variant: { inputShift: shift } })),
  words: (p) => `each input row is read ${p.shift} elements along (a tile loaded from the wrong offset)`,
};
