import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DUMPER_PATH, dumperLines } from './dumper';

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
});
