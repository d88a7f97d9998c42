// GPT-J's rotary (interleaved pairs of dims) instead of GPT-NeoX's rotate-half.
import { ATTENTION_OPS, type Cause } from '../types';

export const rotaryGptj: Cause = {
  id: 'rotary-gptj',
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: (s) =>
    s.data.cfg.rotaryNdims > 0 ? [{ params: {}, variant: { rotary: { gptj: true } } }] : [],
  words: () => "rotary pairs interleaved dims (GPT-J's convention) instead of GPT-NeoX's rotate-half",
};
