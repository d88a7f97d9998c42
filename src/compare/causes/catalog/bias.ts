// A linear's bias left out or added twice.
import { type Cause, type OpData, PRODUCT_OPS } from '../types';

const hasBias = (d: OpData) => !!d.weights.linear?.bias;

const bias = (m: number, id: string, how: string): Cause => ({
  id,
  family: 'operands',
  ops: PRODUCT_OPS,
  candidates: (s) => (hasBias(s.data) ? [{ params: {}, variant: { bias: m } }] : []),
  words: () => `the bias is ${how}`,
});

export const biasDropped = bias(0, 'bias-dropped', 'left out');
export const biasDoubled = bias(2, 'bias-doubled', 'added twice');
