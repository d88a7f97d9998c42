// The runs' model check in the worker, before anything is streamed: runs made with another model are named together
// (their vocabulary, hidden size, layers), in one line that says to load theirs; a weights file picked as a run is
// named as such; runs of the loaded model pass.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../model/config';
import { writeSafetensors } from '../model/safetensors-write';
import type { RunFileInput } from './api';
import { checkRunsModel } from './runs';

const DIR = 'src/model/testdata/runs/parallel-classic';
const theirs = parseConfigText(readFileSync(join(DIR, 'config.json'), 'utf8'));
const embedded = parseConfigText(readFileSync('public/models/neox-kjv-bytes/config.json', 'utf8'));
const file = (name: string, bytes: Uint8Array = readFileSync(join(DIR, name))): RunFileInput => ({
  name,
  blob: new Blob([Uint8Array.from(bytes)]),
});
const CLEAN = 'clean-cuda.run.safetensors';
const FAULT = 'residual-bf16.run.safetensors';

async function refusal(p: Promise<void>): Promise<{ kind: string; message: string }> {
  const e = await p.then(
    () => null,
    (err: { kind: string; message: string }) => err,
  );
  expect(e, 'expected a refusal').not.toBeNull();
  expect(e!.message).not.toContain('\n');
  return e!;
}

describe('the runs checked against the loaded model before the analysis', () => {
  it('runs of the loaded model pass', async () => {
    expect(theirs.vocabSize).toBe(260);
    await expect(checkRunsModel(theirs, [file(CLEAN), file(FAULT)])).resolves.toBeUndefined();
  });

  it('two runs of another model: both named in one line, what differs, load theirs', async () => {
    const e = await refusal(checkRunsModel(embedded, [file(CLEAN), file(FAULT)]));
    expect(e.kind).toBe('model-mismatch');
    expect(e.message).toBe(
      'these runs come from another model (vocabulary 260, this one has 256; hidden size 32, this one has 256): load theirs',
    );
  });

  it('one run of another model beside one that fits: that one is named by its side and file', async () => {
    const cfg = { ...theirs, vocabSize: 200 };
    const fits = writeSafetensors(
      [{ name: 'hidden_states.1', dtype: 'F32', shape: [2, 32], data: new Float32Array(64) }],
      { tokens: '[1, 2]' },
    );
    const e = await refusal(checkRunsModel(cfg, [file('mine.safetensors', fits), file(CLEAN)]));
    expect(e.message).toBe(
      `run B (${CLEAN}) comes from another model (vocabulary 260, this one has 200): load theirs`,
    );
  });

  it("a model's weights picked as a run: named as weights, beside its file", async () => {
    const e = await refusal(checkRunsModel(theirs, [file('model.safetensors')]));
    expect(e.kind).toBe('input');
    expect(e.message).toMatch(
      /^model\.safetensors: a model's weights \(\d+ parameters such as .*\), not a run/,
    );
  });

  it('a file that is no safetensors at all is left to the read (which names it beside its picker)', async () => {
    await expect(
      checkRunsModel(theirs, [file('notes.safetensors', new TextEncoder().encode('not a safetensors file'))]),
    ).resolves.toBeUndefined();
  });
});
