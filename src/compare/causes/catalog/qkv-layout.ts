// The fused QKV read as [3, heads, head_dim] instead of GPT-NeoX's [heads, 3, head_dim].
import { ATTENTION_OPS, type Cause } from '../types';

export const qkvLayout: Cause = {
  id: 'qkv-layout',
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: () => [{ params: {}, variant: { rotary: { layout3: true } } }],
  words: () => 'the fused QKV is read as [3, heads, head_dim] instead of [heads, 3, head_dim]',
};
