// The output written s elements off (a misaligned write): shifts of up to 8 either way, and of a vector's or a tile's
// width (16, 32, 64).
import { ALL_OPS, type Cause } from '../types';

export const elementsShifted: Cause = {
  id: 'elements-shifted',
  family: 'layout',
  rows: 'whole',
  ops: ALL_OPS,
  candidates: () =>
    [1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64]
      .flatMap((k) => [k, -k])
      .map((shift) => ({ params: { shift }, variant: { elemShift: shift } })),
  words: (p) => {
    const s = Number(p.shift);
    const n = Math.abs(s);
    return `the output is written ${n} element${n === 1 ? '' : 's'} ${s > 0 ? 'late' : 'early'} (element i holds element i ${s > 0 ? '−' : '+'} ${n}: a misaligned write)`;
  },
};
