// Each input row of a product read s elements along: a tile loaded from the wrong offset — up to 4 either way, and a
// vector's or a small tile's width (8, 16).
import { type Cause, PRODUCT_OPS } from '../types';

export const inputShifted: Cause = {
  id: 'input-shifted',
  family: 'layout',
  ops: PRODUCT_OPS,
  candidates: () =>
    [1, 2, 3, 4, 8, 16]
      .flatMap((k) => [k, -k])
      .map((shift) => ({ params: { shift }, variant: { inputShift: shift } })),
  words: (p) => {
    const s = Number(p.shift);
    const n = Math.abs(s);
    return `each input row is read ${n} element${n === 1 ? '' : 's'} ${s > 0 ? 'ahead' : 'behind'} (element k takes element k ${s > 0 ? '+' : '−'} ${n}: a tile loaded from the wrong offset)`;
  },
};
