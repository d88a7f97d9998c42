// LayerNorm's variance divided by d − 1 (unbiased) instead of d.
import { type Cause, NORM_OPS } from '../types';

export const lnUnbiasedVar: Cause = {
  id: 'ln-unbiased-var',
  family: 'constants',
  ops: NORM_OPS,
  candidates: () => [{ params: {}, variant: { norm: { unbiased: true } } }],
  words: () => 'LayerNorm divides the variance by d − 1 (unbiased) instead of d',
};
