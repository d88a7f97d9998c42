// A square product's weight used transposed.
import { type Cause, PRODUCT_OPS } from '../types';

export const weightTransposed: Cause = {
  id: 'weight-transposed',
  family: 'layout',
  ops: PRODUCT_OPS,
  candidates: (s) => {
    const w = s.data.weights.linear?.weight;
    return w && w.shape[0] === w.shape[1] ? [{ params: {}, variant: { transposed: true } }] : [];
  },
  words: () => 'the weight is used transposed',
};
