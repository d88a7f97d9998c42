import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DUMPER_PATH, dumperLines, NO_IDS, promptOf } from './dumper';

describe('the dumper in the page', () => {
  it('serves the same dump_run.py as tools/ (byte for byte)', () => {
    const served = readFileSync(new URL(`../../../public/${DUMPER_PATH}`, import.meta.url));
    const tool = readFileSync(new URL('../../../tools/dump_run.py', import.meta.url));
    expect(served.length).toBeGreaterThan(1000);
    expect(Buffer.compare(served, tool)).toBe(0);
  });

  it('names a Hub model by repo and revision, and the prompt by its token ids', () => {
    const lines = dumperLines(
      { name: 'pythia-1b', url: 'https://huggingface.co/EleutherAI/pythia-1b/resolve/step143000/' },
      { tokens: [510, 4691, 13] },
    );
    expect(lines).toHaveLength(4);
    expect(lines[2]).toBe(
      'model = AutoModelForCausalLM.from_pretrained("EleutherAI/pythia-1b", revision="step143000").eval()',
    );
    expect(lines[3]).toBe('dump_run(model, torch.tensor([510, 4691, 13]), "run.safetensors", label="mine")');
  });

  it('asks for a folder when the model is not from the Hub, and quotes names safely', () => {
    const lines = dumperLines({ name: 'my "model"' }, { text: 'And God said\n' });
    expect(lines[2]).toBe('model = AutoModelForCausalLM.from_pretrained("path/to/my \\"model\\"").eval()');
    expect(lines[3]).toBe(
      'dump_run(model, AutoTokenizer.from_pretrained("path/to/my \\"model\\"")("And God said\\n", ' +
        'return_tensors="pt").input_ids, "run.safetensors", label="mine")',
    );
  });

  it('leaves the folder to fill in where the name is the architecture and size (files picked without a folder)', () => {
    const lines = dumperLines({ name: 'Qwen2ForCausalLM 2 × 72' }, { tokens: [1, 2] });
    expect(lines[2]).toBe('model = AutoModelForCausalLM.from_pretrained("path/to/model").eval()');
    // a name from the config's _name_or_path is a folder's name like any other
    expect(dumperLines({ name: 'HuggingFaceTB/SmolLM2-135M' }, { tokens: [1] })[2]).toBe(
      'model = AutoModelForCausalLM.from_pretrained("path/to/HuggingFaceTB/SmolLM2-135M").eval()',
    );
  });

  it('imports AutoTokenizer only where a text prompt uses it', () => {
    const ids = dumperLines({ name: 'm' }, { tokens: [1, 2] });
    expect(ids[0]).toBe('import torch; from transformers import AutoModelForCausalLM');
    expect(ids.join('\n')).not.toContain('AutoTokenizer');
    const text = dumperLines({ name: 'm' }, { text: 'hi' });
    expect(text[0]).toBe('import torch; from transformers import AutoModelForCausalLM, AutoTokenizer');
    expect(text[3]).toContain('AutoTokenizer.from_pretrained(');
  });

  it("never writes an empty tensor: a model without a tokenizer takes token ids, its last run's, else a blank", () => {
    // A model without a tokenizer and a text prompt (or ids that do not parse).
    expect(promptOf('And God said', 'text', 'token ids only', null)).toEqual({ tokens: [] });
    expect(promptOf('And God said', 'ids', 'token ids only', [5, 6])).toEqual({ tokens: [5, 6] });
    expect(promptOf('And God said', 'text', 'token ids only', [5, 6])).toEqual({ tokens: [5, 6] });
    expect(promptOf('3, 14 15', 'ids', 'token ids only', [5, 6])).toEqual({ tokens: [3, 14, 15] });
    expect(promptOf('héllo', 'text', 'bytes', null)).toEqual({ tokens: [104, 195, 169, 108, 108, 111] });
    expect(promptOf('hello', 'text', 'tokenizer.json', null)).toEqual({ text: 'hello' });
    const blank = dumperLines({ name: 'm' }, promptOf('', 'ids', 'token ids only', null));
    expect(blank[3]).toBe(`dump_run(model, torch.tensor(${NO_IDS}), "run.safetensors", label="mine")`);
    for (const p of ['', 'x', '1, -2', 'And God said'])
      for (const mode of ['text', 'ids'] as const)
        for (const tok of ['token ids only', 'bytes', 'tokenizer.json'])
          expect(dumperLines({ name: 'm' }, promptOf(p, mode, tok, null)).join('\n')).not.toContain(
            'tensor([])',
          );
  });
});
