// Rotary applied to another number of each head's dims: every even width tried.
import { ATTENTION_OPS, type Cause } from '../types';

export const rotaryWidth: Cause = {
  id: 'rotary-width',
  family: 'constants',
  ops: ATTENTION_OPS,
  candidates: (s) => {
    const { headDim, rotaryNdims } = s.data.cfg;
    const out = [];
    for (let n = 0; n <= headDim; n += 2)
      if (n !== rotaryNdims) out.push({ params: { ndims: n }, variant: { rotaryNdims: n } });
    return out;
  },
  words: (p, d) => `rotary is applied to ${p.ndims} dims of each head instead of ${d.cfg.rotaryNdims}`,
};
