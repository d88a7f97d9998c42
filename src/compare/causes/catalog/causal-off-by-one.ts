// The causal mask off by one: each position also sees the next token (+1), or does not see itself (−1).
import { ATTENTION_OPS, type Cause } from '../types';

export const causalOffByOne: Cause = {
  id: 'causal-off-by-one',
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: () =>
    [1, -1].map((offset) => ({ params: { offset }, variant: { scores: { causalOffset: offset } } })),
  words: (p) =>
    Number(p.offset) > 0
      ? 'the causal mask is off by one: each position also sees the next token'
      : 'the causal mask is off by one: each position does not see itself',
};
