// The KV cache stored in a narrower type: the keys (after rotary) and the values rounded to fp16 or bf16 before the
// scores read them — every position, as a cache written in half holds them. At a decode kernel's rows only where the
// prefill attended to its own fresh keys (scored on the rows the error lives in: explain.ts).
import type { NumFormat } from '../../../numeric/round';
import { ATTENTION_OPS, type Cause } from '../types';

const kvCache = (f: NumFormat): Cause => ({
  id: `kv-cache-${f}`,
  family: 'narrower',
  ops: ATTENTION_OPS,
  candidates: () => [{ params: { format: f }, variant: { kvFormat: f } }],
  words: () => `the KV cache is stored in ${f} (keys and values rounded)`,
});

export const kvCacheFp16 = kvCache('fp16');
export const kvCacheBf16 = kvCache('bf16');
