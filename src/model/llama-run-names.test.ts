import { describe, expect, it } from 'vitest';
import { smallLlamaConfig } from './llama-random';
import { familySlotWidth, slotOfLlamaName } from './run-names';

// What `dump_run` records of a Qwen3ForCausalLM (transformers 5.17 `named_modules()`, `:in` / `:out`), and where
// each lands. L = 2.
const QWEN3_NAMES: [string, string | null][] = [
  ['model.embed_tokens:out', 'embed'],
  ['model.layers.0:in', 'embed'],
  ['model.layers.0.input_layernorm:in', 'embed'],
  ['model.layers.0.input_layernorm:out', 'layers.0.ln1'],
  ['model.layers.0.self_attn:in', 'layers.0.ln1'],
  ['model.layers.0.self_attn.q_proj:in', 'layers.0.ln1'],
  ['model.layers.0.self_attn.q_proj:out', 'layers.0.q'],
  ['model.layers.0.self_attn.k_proj:out', 'layers.0.k'],
  ['model.layers.0.self_attn.v_proj:out', 'layers.0.v'],
  ['model.layers.0.self_attn.q_norm:in', 'layers.0.q'],
  ['model.layers.0.self_attn.q_norm:out', 'layers.0.q_norm'],
  ['model.layers.0.self_attn.k_norm:in', 'layers.0.k'],
  ['model.layers.0.self_attn.k_norm:out', 'layers.0.k_norm'],
  ['model.layers.0.self_attn.o_proj:in', 'layers.0.ctx'],
  ['model.layers.0.self_attn.o_proj:out', 'layers.0.attn_out'],
  ['model.layers.0.self_attn:out', 'layers.0.attn_out'],
  ['model.layers.0.post_attention_layernorm:in', 'layers.0.ln2_in'],
  ['model.layers.0.post_attention_layernorm:out', 'layers.0.ln2'],
  ['model.layers.0.mlp:in', 'layers.0.ln2'],
  ['model.layers.0.mlp.gate_proj:out', 'layers.0.gate'],
  ['model.layers.0.mlp.up_proj:in', 'layers.0.ln2'],
  ['model.layers.0.mlp.up_proj:out', 'layers.0.up'],
  ['model.layers.0.mlp.act_fn:in', 'layers.0.gate'],
  ['model.layers.0.mlp.act_fn:out', null],
  ['model.layers.0.mlp.down_proj:in', 'layers.0.swiglu'],
  ['model.layers.0.mlp.down_proj:out', 'layers.0.mlp_out'],
  ['model.layers.0.mlp:out', 'layers.0.mlp_out'],
  ['model.layers.0:out', 'layers.0.out'],
  ['model.layers.1:in', 'layers.0.out'],
  ['model.layers.1.input_layernorm:in', 'layers.0.out'],
  ['model.norm:in', 'layers.1.out'],
  ['model.norm:out', 'final_norm'],
  ['model:out', 'final_norm'],
  ['lm_head:in', 'final_norm'],
  ['lm_head:out', 'logits'],
  ['model.rotary_emb:in', null],
  ['model.rotary_emb:out', null],
  ['hidden_states.0', 'embed'],
  ['hidden_states.1', 'layers.0.out'],
  ['hidden_states.2', 'final_norm'],
  ['logits', 'logits'],
  ['gpt_neox.layers.0:out', null],
  ['model.layers.0.self_attn.rotary_emb:out', null],
];

describe('the Llama family run names (from the op registry)', () => {
  it.each(QWEN3_NAMES)('%s -> %s', (name, slot) => {
    expect(slotOfLlamaName(name, 2)?.slot ?? null).toBe(slot);
  });

  it('gives each slot its width: q/k/v per head counts, ff, vocab', () => {
    const cfg = smallLlamaConfig({ flavour: 'qwen3', qkNorm: true, headDim: 12, rotaryDim: 12 });
    const width = (name: string) => familySlotWidth(slotOfLlamaName(name, 2)!.width, cfg);
    expect(width('model.layers.1.self_attn.q_proj:out')).toBe(5 * 12);
    expect(width('model.layers.1.self_attn.k_norm:out')).toBe(1 * 12);
    expect(width('model.layers.1.mlp.up_proj:out')).toBe(56);
    expect(width('model.layers.1.self_attn.o_proj:in')).toBe(5 * 12);
    expect(width('model.layers.1.self_attn.o_proj:out')).toBe(40);
    expect(width('lm_head:out')).toBe(97);
  });

  it('returns a layer past the model as it is (the caller says: a run of another model)', () => {
    expect(slotOfLlamaName('model.layers.7.mlp:out', 2)).toEqual({
      slot: 'layers.7.mlp_out',
      layer: 7,
      width: 'hidden',
    });
  });
});
