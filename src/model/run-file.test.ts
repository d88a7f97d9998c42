// The run-file reader against bad runs: each refused with one line naming what is wrong, before any tensor is
// decoded — another model, another prompt, the batch dimension kept, a truncated file, a name listed twice, tokens
// past the vocabulary, no tokens, nothing of the contract; and good runs read with their aliases and handoffs.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from './config';
import { randomConfigJson } from './random-model';
import { checkSameTokens, otherModelWords, runModelShape } from './run-file';
import { filled, metaOf, runReader } from './run-file.testdata';
import { slotOfName } from './run-names';
import { writeSafetensors } from './safetensors-write';

const cfg = parseConfigText(
  JSON.stringify(
    randomConfigJson({ vocab: 50, d: 12, layers: 2, heads: 3, ff: 20, rotaryPct: 0.5, parallel: true }),
  ),
);
const T = 5;
const tokens = [1, 2, 3, 4, 49];
const t = filled;
const meta = (over: Record<string, string> = {}) => metaOf(tokens, over);
const { read, refused } = runReader(cfg);

describe('run files', () => {
  it('maps module paths, hidden_states and TransformerLens names onto slots', () => {
    const L = 4;
    expect(slotOfName('gpt_neox.layers.3:in', L)?.slot).toBe('layers.2.out');
    expect(slotOfName('gpt_neox.layers.0:in', L)?.slot).toBe('embed');
    expect(slotOfName('gpt_neox.layers.2.mlp.dense_4h_to_h:in', L)?.slot).toBe('layers.2.gelu');
    expect(slotOfName('gpt_neox.layers.2.attention.dense:in', L)?.slot).toBe('layers.2.ctx');
    expect(slotOfName('gpt_neox.layers.2.post_attention_layernorm:in', L)?.slot).toBe('layers.2.ln2_in');
    expect(slotOfName('hidden_states.0', L)?.slot).toBe('embed');
    expect(slotOfName('hidden_states.2', L)?.slot).toBe('layers.1.out');
    expect(slotOfName('hidden_states.4', L)?.slot).toBe('final_norm');
    expect(slotOfName('gpt_neox.final_layer_norm:in', L)?.slot).toBe('layers.3.out');
    expect(slotOfName('lm_head:out', L)?.slot).toBe('logits');
    expect(slotOfName('embed_out:in', L)?.slot).toBe('final_norm');
    expect(slotOfName('blocks.1.hook_resid_pre', L)?.slot).toBe('layers.0.out');
    expect(slotOfName('blocks.1.hook_resid_mid', L)?.slot).toBe('layers.1.ln2_in');
    expect(slotOfName('blocks.1.ln2.hook_normalized', L)?.slot).toBe('layers.1.ln2');
    expect(slotOfName('gpt_neox.rotary_emb:out', L)).toBeNull();
    expect(slotOfName('gpt_neox.layers.1.attention.rotary_emb:out', L)).toBeNull();
  });

  it('reads a good run: one tensor per slot, aliases compared, unknown names listed', async () => {
    const differ = t('gpt_neox.layers.1:in', [T, 12], 0.25);
    const r = await read(
      writeSafetensors(
        [
          t('gpt_neox.layers.0:out', [T, 12]),
          differ,
          t('hidden_states.1', [T, 12]),
          t('gpt_neox.rotary_emb:out', [T, 2]),
          { ...t('logits', [T, 50]), dtype: 'BF16' },
        ],
        meta({ label: 'mine', device: 'cpu' }),
      ),
    );
    expect(r.tokens).toEqual(tokens);
    expect(r.label).toBe('mine');
    expect([...r.slots.keys()].sort()).toEqual(['layers.0.out', 'logits']);
    expect(r.ignored).toEqual(['gpt_neox.rotary_emb:out']);
    expect(r.handoffs).toEqual([
      {
        slot: 'layers.0.out',
        kept: 'gpt_neox.layers.0:out',
        other: 'gpt_neox.layers.1:in',
        differing: T * 12,
      },
    ]);
    expect(r.storage).toBe('F32');
  });

  const good = () => t('gpt_neox.layers.0:out', [T, 12]);

  it('refuses bad runs with one line naming what is wrong', async () => {
    const good = t('gpt_neox.layers.0:out', [T, 12]);
    await refused(
      writeSafetensors([t('gpt_neox.layers.0:out', [1, T, 12])], meta()),
      /drops the batch dimension/,
    );
    await refused(writeSafetensors([t('gpt_neox.layers.0:out', [T * 12])], meta()), /rank 1/);
    await refused(
      writeSafetensors([t('gpt_neox.layers.0:out', [T, 16])], meta()),
      /this run comes from another model \(hidden size 16, this one has 12\): load theirs/,
    );
    await refused(
      writeSafetensors([t('gpt_neox.layers.0:out', [T + 1, 12])], meta()),
      /holds 5 tokens.*another prompt/,
    );
    await refused(
      writeSafetensors([t('gpt_neox.layers.5:out', [T, 12])], meta()),
      /another model \(at least 6 layers, this one has 2\)/,
    );
    await refused(
      writeSafetensors([t('hidden_states.3', [T, 12])], meta()),
      /at least 3 layers, this one has 2/,
    );
    await refused(
      writeSafetensors([good], meta({ tokens: '[1, 2, 50]' })),
      /another model \(token id 50, past this one's vocabulary of 50\): load theirs/,
    );
    await refused(writeSafetensors([good], meta({ tokens: 'one two' })), /not JSON/);
    await refused(writeSafetensors([good], {}), /no 'tokens'/);
    await refused(
      writeSafetensors([t('gpt_neox.rotary_emb:out', [T, 2])], meta()),
      /no tensor of the run-file contract/,
    );
    const bytes = writeSafetensors([good, t('logits', [T, 50])], meta());
    await refused(bytes.subarray(0, bytes.length - 7), /past the end of the data section|truncated/);
    // A name listed twice: the header's second name overwritten in place with the first (same length).
    const two = writeSafetensors([t('hidden_states.0', [T, 12]), t('hidden_states.1', [T, 12])], meta());
    const twice = Uint8Array.from(two);
    const at = Buffer.from(twice).indexOf('hidden_states.1');
    twice[at + 'hidden_states.'.length] = '0'.charCodeAt(0);
    await refused(twice, /twice|duplicate/i);
  });

  it('another model is named by what differs, before any token is judged: vocabulary, hidden size, layers', async () => {
    // The logits say the vocabulary; a token id inside theirs but past ours is not blamed on the token.
    await refused(
      writeSafetensors([good(), t('logits', [T, 350])], meta({ tokens: '[1, 2, 280, 4, 5]' })),
      /^run\.safetensors: this run comes from another model \(vocabulary 350, this one has 50\): load theirs$/,
    );
    await refused(
      writeSafetensors([t('gpt_neox.layers.7.attention.query_key_value:out', [T, 48])], meta()),
      /another model \(hidden size 16, this one has 12; at least 8 layers, this one has 2\)/,
    );
    const shape = runModelShape(
      [
        { name: 'hidden_states.4', shape: [T, 12] },
        { name: 'lm_head:out', shape: [T, 50] },
        { name: 'blocks.0.attn.hook_z', shape: [T, 3, 99] },
      ],
      meta(),
    );
    expect(shape).toEqual({ vocab: 50, maxTokenId: 49, hidden: 12, minLayers: 4 });
    expect(otherModelWords(shape, cfg)).toBe('at least 4 layers, this one has 2');
    expect(otherModelWords({ ...shape, minLayers: 2 }, cfg)).toBeNull();
  });

  it("a model's weights file picked as a run is named as such", async () => {
    const weights = writeSafetensors(
      [t('gpt_neox.embed_in.weight', [50, 12]), t('gpt_neox.layers.0.attention.query_key_value.bias', [36])],
      {},
    );
    await refused(
      weights,
      /^run\.safetensors: a model's weights \(2 parameters such as .*gpt_neox\.embed_in\.weight.*\), not a run/,
    );
    // With tokens it is judged as a run (its names are not of the contract).
    await refused(
      writeSafetensors([t('gpt_neox.embed_in.weight', [50, 12])], meta()),
      /no tensor of the run-file contract/,
    );
  });

  it('two runs of different prompts are refused', async () => {
    const a = await read(writeSafetensors([t('logits', [T, 50])], meta()));
    const b = await read(writeSafetensors([t('logits', [T, 50])], meta({ tokens: '[1, 2, 3, 5, 49]' })));
    expect(() => checkSameTokens(a, b)).toThrow(/other tokens .* position 3 \(4 against 5\)/);
  });
});
