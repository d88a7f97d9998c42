// No causal mask: each position sees the tokens after it.
import { ATTENTION_OPS, type Cause } from '../types';

export const causalMissing: Cause = {
  id: 'causal-missing',
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: () => [{ params: {}, variant: { scores: { causalOffset: null } } }],
  words: () => 'the causal mask is missing: each position sees the tokens after it',
};
