// The runs' model check in the worker for a Llama-family model, before anything is streamed: its runs are read by
// the family's names, so a run of the loaded model passes and a run of another model of the family is named in one
// line (its vocabulary, hidden size, layers) that says to load theirs; GPT-NeoX's names say nothing of the model.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseModelConfigText } from '../model/model-config';
import { writeSafetensors } from '../model/safetensors-write';
import type { RunFileInput } from './api';
import { checkRunsModel } from './runs';

const config = (name: string) =>
  parseModelConfigText(readFileSync(join('src/model/testdata/llama', name, 'config.json'), 'utf8'));
const qwen3 = config('qwen3-qknorm');
const mistral = config('mistral-window');
const RUN = 'src/model/testdata/llama/qwen3-qknorm/run.safetensors';
const file = (name: string, bytes: Uint8Array): RunFileInput => ({
  name,
  blob: new Blob([Uint8Array.from(bytes)]),
});
const hfRun = () => file('run.safetensors', readFileSync(RUN));

describe("a Llama-family model's runs checked against it before the analysis", () => {
  it("Hugging Face's run of the loaded model passes", async () => {
    await expect(checkRunsModel(qwen3, [hfRun()])).resolves.toBeUndefined();
  });

  it('a run of another model of the family: named in one line, what differs, load theirs', async () => {
    const e = await checkRunsModel(mistral, [hfRun()]).then(
      () => null,
      (err: { kind: string; message: string }) => err,
    );
    expect(e?.kind).toBe('model-mismatch');
    expect(e?.message).toBe(
      'run A (run.safetensors) comes from another model (vocabulary 261, this one has 259): load theirs',
    );
  });

  it('a run whose layers pass the model: named by the layers its names reach', async () => {
    const deep = writeSafetensors(
      [{ name: 'model.layers.5.mlp:out', dtype: 'F32', shape: [2, 72], data: new Float32Array(144) }],
      { tokens: '[1, 2]' },
    );
    const e = await checkRunsModel(qwen3, [file('deep.safetensors', deep)]).then(
      () => null,
      (err: { message: string }) => err,
    );
    expect(e?.message).toBe(
      'run A (deep.safetensors) comes from another model (at least 6 layers, this one has 2): load theirs',
    );
  });
});
