// LayerNorm's weight (gamma) or bias (beta) left out.
import { type Cause, NORM_OPS } from '../types';

const normParam = (which: 'weight' | 'bias'): Cause => ({
  id: `ln-${which}-dropped`,
  family: 'operands',
  ops: NORM_OPS,
  candidates: () => [
    { params: {}, variant: { norm: which === 'weight' ? { noWeight: true } : { noBias: true } } },
  ],
  words: () => `LayerNorm's ${which === 'weight' ? 'weight (gamma)' : 'bias (beta)'} is left out`,
});

export const lnWeightDropped = normParam('weight');
export const lnBiasDropped = normParam('bias');
