import { describe, expect, it } from 'vitest';
import { NEOX_PARALLEL, NEOX_SEQUENTIAL } from '../ops/families';
import { slotWidth } from '../ops/widths';
import { smallLlamaConfig } from './llama-config';
import { slotOfFamilyName, slotOfLlamaName, slotOfName } from './run-names';

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
    const width = (name: string) => slotWidth(cfg, slotOfLlamaName(name, 2)!.width);
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

// GPT-NeoX's names as the registry gives them are today's names (slotOfName): one set of names. A parallel model has
// no mid-residual, so its post_attention_layernorm reads the layer's input, which today's table calls `ln2_in`.
describe("GPT-NeoX run names from the registry agree with today's table", () => {
  const modules = [
    '',
    'input_layernorm',
    'attention',
    'attention.query_key_value',
    'attention.dense',
    'post_attention_dropout',
    'post_attention_layernorm',
    'mlp',
    'mlp.dense_h_to_4h',
    'mlp.act',
    'mlp.dense_4h_to_h',
    'post_mlp_dropout',
  ];
  const names = [
    ...modules.flatMap((m) =>
      [0, 2].flatMap((i) => ['in', 'out'].map((io) => `gpt_neox.layers.${i}${m ? `.${m}` : ''}:${io}`)),
    ),
    'gpt_neox.embed_in:out',
    'gpt_neox.emb_dropout:in',
    'gpt_neox.emb_dropout:out',
    'gpt_neox.final_layer_norm:in',
    'gpt_neox.final_layer_norm:out',
    'gpt_neox:out',
    'embed_out:in',
    'embed_out:out',
    'lm_head:in',
    'lm_head:out',
    ':out',
    'logits',
    'hidden_states.0',
    'hidden_states.2',
    'hidden_states.3',
    'gpt_neox.rotary_emb:out',
  ];
  it.each(names)('%s', (name) => {
    const today = slotOfName(name, 3)?.slot ?? null;
    expect(slotOfFamilyName(NEOX_SEQUENTIAL, name, 3)?.slot ?? null).toBe(today);
    const parallel = slotOfFamilyName(NEOX_PARALLEL, name, 3)?.slot ?? null;
    if (/post_attention_layernorm:in$/.test(name))
      expect(parallel).toBe(name.includes('layers.0') ? 'embed' : 'layers.1.out');
    else expect(parallel).toBe(today);
  });
});
