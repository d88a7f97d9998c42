import { describe, expect, it } from 'vitest';
import { classifyModelFiles, namedBySize, nameFromConfig } from './model-files';

describe('classifyModelFiles', () => {
  it('finds the three files in any order and names the model by its folder', () => {
    const r = classifyModelFiles([
      { name: 'tokenizer.json', relativePath: 'models/pythia-70m/tokenizer.json' },
      { name: 'model.safetensors', relativePath: 'models/pythia-70m/model.safetensors' },
      { name: 'config.json', relativePath: 'models/pythia-70m/config.json' },
      { name: 'README.md', relativePath: 'models/pythia-70m/README.md' },
    ]);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.name).toBe('config.json');
    expect(r.weights?.name).toBe('model.safetensors');
    expect(r.tokenizer?.name).toBe('tokenizer.json');
    expect(r.name).toBe('pythia-70m');
  });

  it('tokenizer.json is optional; without a folder the weights name the model', () => {
    const r = classifyModelFiles([{ name: 'tiny.safetensors' }, { name: 'config.json' }]);
    expect(r.ok && r.tokenizer).toBeNull();
    expect(r.ok && r.name).toBe('tiny');
  });

  it('generic weights names without a folder leave the name to the config', () => {
    for (const w of ['model.safetensors', 'MODEL.safetensors', 'pytorch_model.safetensors']) {
      const r = classifyModelFiles([{ name: w }, { name: 'config.json' }]);
      expect(r.ok && r.name, w).toBeNull();
    }
    const shards = classifyModelFiles([
      { name: 'model-00001-of-00002.safetensors' },
      { name: 'model-00002-of-00002.safetensors' },
      { name: 'model.safetensors.index.json' },
      { name: 'config.json' },
    ]);
    expect(shards.ok && shards.name).toBeNull();
    // a folder names it still
    const folder = classifyModelFiles([
      { name: 'model.safetensors', relativePath: 'SmolLM2-135M/model.safetensors' },
      { name: 'config.json', relativePath: 'SmolLM2-135M/config.json' },
    ]);
    expect(folder.ok && folder.name).toBe('SmolLM2-135M');
  });

  it('names a model from its config: a plain _name_or_path, else its architecture and size', () => {
    const cfg = (o: Record<string, unknown>) =>
      JSON.stringify({
        architectures: ['LlamaForCausalLM'],
        model_type: 'llama',
        num_hidden_layers: 30,
        hidden_size: 576,
        ...o,
      });
    expect(nameFromConfig(cfg({ _name_or_path: 'HuggingFaceTB/SmolLM2-135M' }))).toBe(
      'HuggingFaceTB/SmolLM2-135M',
    );
    expect(nameFromConfig(cfg({ _name_or_path: 'pythia-70m' }))).toBe('pythia-70m');
    // a path on the saver's disk, empty, or not a string: the architecture and size
    for (const p of ['/home/me/ckpt/step-1000', './out', 'C:\\models\\x', '../up/x', 'a/b/c', '', 7, null])
      expect(nameFromConfig(cfg({ _name_or_path: p })), String(p)).toBe('LlamaForCausalLM 30 × 576');
    expect(nameFromConfig(cfg({}))).toBe('LlamaForCausalLM 30 × 576');
    expect(nameFromConfig(cfg({ architectures: undefined }))).toBe('llama 30 × 576');
    expect(nameFromConfig(cfg({ hidden_size: undefined }))).toBe('LlamaForCausalLM');
    expect(nameFromConfig(JSON.stringify({ vocab_size: 3 }))).toBeNull();
    expect(nameFromConfig('not json')).toBeNull();
    expect(nameFromConfig('[1]')).toBeNull();
    expect(namedBySize(nameFromConfig(cfg({}))!)).toBe(true);
    expect(namedBySize('pythia-70m')).toBe(false);
    expect(namedBySize('HuggingFaceTB/SmolLM2-135M')).toBe(false);
  });

  it('says what is missing or ambiguous', () => {
    expect(classifyModelFiles([{ name: 'config.json' }])).toEqual({
      ok: false,
      message: 'No model.safetensors among the files.',
    });
    const noCfg = classifyModelFiles([{ name: 'model.safetensors' }, { name: 'tokenizer.json' }]);
    expect(!noCfg.ok && noCfg.message).toMatch(/config\.json/);
    const two = classifyModelFiles([
      { name: 'a.safetensors' },
      { name: 'b.safetensors' },
      { name: 'config.json' },
    ]);
    expect(!two.ok && two.message).toMatch(/2 \.safetensors files and no model\.safetensors\.index\.json/);
  });

  it('takes an index and its shards as a sharded model; model.safetensors wins when both are there', () => {
    const shards = [
      {
        name: 'model-00002-of-00002.safetensors',
        relativePath: 'm/pythia-6.9b/model-00002-of-00002.safetensors',
      },
      {
        name: 'model-00001-of-00002.safetensors',
        relativePath: 'm/pythia-6.9b/model-00001-of-00002.safetensors',
      },
    ];
    const idx = {
      name: 'model.safetensors.index.json',
      relativePath: 'm/pythia-6.9b/model.safetensors.index.json',
    };
    const r = classifyModelFiles([...shards, idx, { name: 'config.json' }, { name: 'tokenizer.json' }]);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.weights).toBeUndefined();
    expect(r.index?.name).toBe(idx.name);
    expect(r.shards?.map((s) => s.name)).toEqual(shards.map((s) => s.name));
    expect(r.name).toBe('pythia-6.9b');
    const both = classifyModelFiles([...shards, idx, { name: 'model.safetensors' }, { name: 'config.json' }]);
    expect(both.ok && both.weights?.name).toBe('model.safetensors');
    // The index is not taken for the config.
    const noCfg = classifyModelFiles([...shards, idx]);
    expect(!noCfg.ok && noCfg.message).toMatch(/No config\.json/);
  });
});
