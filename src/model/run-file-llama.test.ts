// The run-file reader on runs of a Llama-family model (docs/RUNS.md): the family's names land on the registry's
// slots, q and k (and Qwen3's q/k norms) are read as [T, H·hd] or [T, heads, hd], aliases are kept once and differing
// ones reported, generation metadata is read; and the GPT-NeoX refusals hold for the family, each one line before any
// tensor is decoded: another model (its vocabulary, hidden size, layers), a weights file, a wrong shape, rows that
// are not the tokens, tokens past the vocabulary, a layer past the model's, GPT-NeoX names.
import { describe, expect, it } from 'vitest';
import type { LlamaConfig } from '../numeric/types';
import { smallLlamaConfig } from './llama-config';
import { filled, metaOf, runReader } from './run-file.testdata';
import { writeSafetensors } from './safetensors-write';

// d 40, 5 q heads of 12 over 1 KV head, ff 56, vocab 97, 2 layers, q/k norms.
const cfg: LlamaConfig = smallLlamaConfig({ flavour: 'qwen3', qkNorm: true, headDim: 12 });
const T = 4;
const tokens = [1, 2, 3, 96];
const t = filled;
const meta = (over: Record<string, string> = {}) => metaOf(tokens, over);
const { read, refused } = runReader(cfg);

describe('runs of a Llama-family model', () => {
  it('reads the family names onto the registry slots, q/k per head too, aliases once, others listed', async () => {
    const run = await read(
      writeSafetensors(
        [
          t('model.embed_tokens:out', [T, 40]),
          t('model.layers.0:in', [T, 40]),
          t('model.layers.1.self_attn.q_proj:out', [T, 60], 0.25),
          t('model.layers.1.self_attn.q_norm:in', [T, 5, 12], 0.25),
          t('model.layers.1.self_attn.k_norm:out', [T, 1, 12]),
          t('model.layers.1.self_attn.o_proj:in', [T, 60]),
          t('model.layers.1.mlp.act_fn:in', [T, 56]),
          t('model.layers.1.mlp.act_fn:out', [T, 56]),
          t('model.layers.1.mlp.down_proj:in', [T, 56]),
          t('model.layers.1:out', [T, 40], 1),
          t('model.norm:in', [T, 40], 2),
          t('model.rotary_emb:out', [T, 12]),
          t('lm_head:out', [T, 97]),
          t('logits', [T, 97]),
        ],
        meta({ label: 'mine', prefill: '2', generated: '[3, 96, 7]' }),
      ),
    );
    expect([...run.slots.keys()].sort()).toEqual(
      [
        'embed',
        'layers.1.q',
        'layers.1.k_norm',
        'layers.1.ctx',
        'layers.1.gate',
        'layers.1.swiglu',
        'layers.1.out',
        'logits',
      ].sort(),
    );
    expect(run.slots.get('layers.1.q')!.name).toBe('model.layers.1.self_attn.q_proj:out');
    expect(run.ignored.sort()).toEqual(['model.layers.1.mlp.act_fn:out', 'model.rotary_emb:out']);
    // The layer's output and the final norm's input differ: a handoff, reported.
    expect(run.handoffs).toEqual([
      { slot: 'layers.1.out', kept: 'model.layers.1:out', other: 'model.norm:in', differing: T * 40 },
    ]);
    expect(run.label).toBe('mine');
    expect(run.generation).toEqual({ prefill: 2, generated: [3, 96, 7] });
  });

  it('refuses a run of another model in one line: its vocabulary, hidden size, layers', async () => {
    await refused(
      writeSafetensors([t('logits', [T, 98]), t('model.layers.0:out', [T, 48])], meta()),
      /another model \(vocabulary 98, this one has 97; hidden size 48, this one has 40\): load theirs/,
    );
    await refused(
      writeSafetensors([t('model.layers.4.mlp:out', [T, 40])], meta()),
      /another model \(at least 5 layers, this one has 2\)/,
    );
    await refused(
      writeSafetensors([t('hidden_states.3', [T, 40])], meta()),
      /another model \(at least 3 layers, this one has 2\)/,
    );
  });

  it('refuses wrong shapes, rows that are not the tokens, tokens past the vocabulary, weights, no names', async () => {
    await refused(
      writeSafetensors([t('model.layers.0.self_attn.k_proj:out', [T, 60])], meta()),
      /'model\.layers\.0\.self_attn\.k_proj:out' has shape \[4, 60\], expected \[4, 12\]/,
    );
    await refused(
      writeSafetensors([t('model.layers.0.mlp.up_proj:out', [1, T, 56])], meta()),
      /drops the batch dimension, expected \[4, 56\]/,
    );
    await refused(
      writeSafetensors([t('model.layers.0:out', [T + 1, 40])], meta()),
      /has 5 rows but __metadata__\.tokens holds 4 tokens/,
    );
    // With the logits the vocabulary is known to be this one's: the token is what is wrong.
    await refused(
      writeSafetensors([t('logits', [T, 97])], { tokens: '[1, 2, 3, 97]' }),
      /tokens\[3\] = 97 is not a token id of this model \(vocabulary 97\)/,
    );
    // Without them, a token id past the vocabulary says another model.
    await refused(
      writeSafetensors([t('model.layers.0:out', [T, 40])], { tokens: '[1, 2, 3, 97]' }),
      /another model \(token id 97, past this one's vocabulary of 97\)/,
    );
    await refused(
      writeSafetensors([t('model.embed_tokens.weight', [97, 40]), t('model.norm.weight', [40])]),
      /a model's weights \(2 parameters such as 'model\.embed_tokens\.weight'\), not a run/,
    );
    // GPT-NeoX's names are not this family's: nothing of the contract.
    await refused(
      writeSafetensors([t('gpt_neox.layers.0:out', [T, 40])], meta()),
      /no tensor of the run-file contract/,
    );
  });
});
