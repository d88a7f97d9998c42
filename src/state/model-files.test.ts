import { describe, expect, it } from 'vitest';
import { classifyModelFiles } from './model-files';

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
    expect(r.weights.name).toBe('model.safetensors');
    expect(r.tokenizer?.name).toBe('tokenizer.json');
    expect(r.name).toBe('pythia-70m');
  });

  it('tokenizer.json is optional; without a folder the weights name the model', () => {
    const r = classifyModelFiles([{ name: 'tiny.safetensors' }, { name: 'config.json' }]);
    expect(r.ok && r.tokenizer).toBeNull();
    expect(r.ok && r.name).toBe('tiny');
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
    expect(!two.ok && two.message).toMatch(/2 \.safetensors/);
  });
});
