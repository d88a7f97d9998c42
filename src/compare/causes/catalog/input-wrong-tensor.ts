// The op reads another recorded tensor of its input's size instead of its input: a stale or aliased buffer.
import { type Cause, NORM_OPS, PRODUCT_OPS } from '../types';
import { othersLike, slotWords } from './shared';

export const inputWrongTensor: Cause = {
  id: 'input-wrong-tensor',
  family: 'operands',
  ops: [...PRODUCT_OPS, ...NORM_OPS, 'act'],
  candidates: (s) =>
    othersLike(s.data, s.data.inputs[0].length).map((o) => ({
      params: { from: o.slot },
      variant: { input: o.data },
    })),
  words: (p, d) =>
    `the op reads ${slotWords(String(p.from), d.layer)} instead of its input (a stale or aliased buffer)`,
};
