// The rotary base other than the config's: searched on a log grid from 10 to 1e7.
import { ATTENTION_OPS, type Cause } from '../types';
import { num, searchLog } from './search';

export const rotaryBase: Cause = {
  id: 'rotary-base',
  family: 'constants',
  ops: ATTENTION_OPS,
  candidates: (s) => {
    if (s.data.cfg.rotaryNdims === 0) return [];
    const base = searchLog(s, (x) => ({ rotaryBase: x }), 10, 1e7, 24);
    return [{ params: { base }, variant: { rotaryBase: base } }];
  },
  words: (p, d) => `the rotary base is ${num(Number(p.base))} instead of ${num(d.cfg.rotaryBase)}`,
};
