// Rotary left off one operand: the queries or the keys kept unrotated (a decode kernel that stores its new key before
// rotating it, say). Over every row, or on the rows the error lives in (explain.ts), the keys before them as the
// prefill rotated them.
import { ATTENTION_OPS, type Cause } from '../types';

const off = (which: 'q' | 'k'): Cause => ({
  id: `rotary-off-${which}`,
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: (s) =>
    s.data.cfg.rotaryNdims === 0 ? [] : [{ params: { operand: which }, variant: { rotaryOff: which } }],
  words: () =>
    which === 'k'
      ? 'rotary left off the keys (k stored unrotated)'
      : 'rotary left off the queries (q unrotated)',
});

export const rotaryOffQ = off('q');
export const rotaryOffK = off('k');
