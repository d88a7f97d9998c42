// The fp64 oracle of the Llama family (HF LlamaForCausalLM, Qwen2/Qwen3/MistralForCausalLM: eval, no cache), read
// off the op registry (op-forward.ts), and its greedy decoding. Every op in float64 on the fp32 weights; HF's own
// "fp64" forward differs from it by HF's fp32 steps (RMSNorm, softmax, RoPE tables: docs/FAMILIES.md), about 1e-7.

import type { HiddenDump, LlamaConfig, LlamaWeights } from '../../numeric/types';
import { argmaxRow } from './forward';
import { type OpForwardOptions, opForward } from './op-forward';

/** The forward on `tokens`: the hidden-state dump, and every step's slot in `taps` (`layers.{i}.{slot}`). */
export function llamaForward(
  cfg: LlamaConfig,
  w: LlamaWeights,
  tokens: readonly number[],
  taps?: Map<string, Float64Array>,
  opts: OpForwardOptions = {},
): HiddenDump<Float64Array> {
  return opForward(cfg, w, tokens, taps, opts);
}

/** Greedy decoding: `n` new token ids after `prompt`, the whole forward rerun for each (no cache). */
export function llamaGreedy(
  cfg: LlamaConfig,
  w: LlamaWeights,
  prompt: readonly number[],
  n: number,
): number[] {
  const ids = [...prompt];
  const out: number[] = [];
  for (let s = 0; s < n; s++) {
    const dump = llamaForward(cfg, w, ids);
    const next = argmaxRow(dump.logits, dump.T - 1, dump.V);
    ids.push(next);
    out.push(next);
  }
  return out;
}
