// The width of a slot's rows and the heads it holds, for a config of either family: the one place that reads the
// config's head counts for a step's width (ops/types.ts SlotWidth). The KV heads are the Llama family's
// (num_key_value_heads: H for MHA, 1 for MQA); GPT-NeoX's are its query heads.

import type { ModelConfig } from '../numeric/types';
import type { SlotWidth } from './types';

/**
 * The heads a slot of `width` holds: the query heads (`q`, `q_heads`), the KV heads (`k` and `v`: `kv`,
 * `kv_heads`) or the three of the fused QKV (`qkv`, `qkv_heads`). A width of no heads (the hidden size, the MLP's,
 * the vocabulary) is refused in one line.
 */
export function headsOf(cfg: ModelConfig, width: SlotWidth): number {
  switch (width) {
    case 'q':
    case 'q_heads':
      return cfg.numHeads;
    case 'kv':
    case 'kv_heads':
      return cfg.family === 'llama' ? cfg.numKvHeads : cfg.numHeads;
    case 'qkv':
    case 'qkv_heads':
      return 3 * cfg.numHeads;
    default:
      throw new Error(`a slot of width '${width}' is not laid out in heads`);
  }
}

/** Values per row of a slot of `width` ([T, width]; a heads layout [heads, T, hd]: heads · hd). */
export function slotWidth(cfg: ModelConfig, width: SlotWidth): number {
  switch (width) {
    case 'hidden':
      return cfg.hiddenSize;
    case 'ff':
      return cfg.intermediateSize;
    case 'vocab':
      return cfg.vocabSize;
    default:
      return headsOf(cfg, width) * cfg.headDim;
  }
}
