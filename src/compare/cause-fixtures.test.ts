// The cause fixtures PyTorch made (src/model/testdata/causes/, tools/cause_fixtures.py; transformers 5.17 on an H200):
// one planted fault per cause id over three models, both residual styles, fp32 and whole-bf16 runs — each found at
// its layer and op with its cause named first, said after "probable cause:" in the one line — and benign runs (CPU,
// eager attention, torch.compile, the model in bf16 and fp16) that name no cause.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { readRunFile } from '../model/run-file';
import { analyzeRuns } from './analyze-runs';

const ROOT = 'src/model/testdata/causes';
interface Entry {
  file: string;
  model: string;
  fault: { id: string; layer: number | null; op: string; cause: string[] } | null;
}
const manifest = JSON.parse(readFileSync(join(ROOT, 'manifest.json'), 'utf8')) as { runs: Entry[] };
const models = [...new Set(manifest.runs.map((r) => r.model))];
const engines: Engine[] = [];
afterAll(() => {
  for (const e of engines) e.dispose();
});

describe.each(models)('cause fixtures made in PyTorch: %s', (model) => {
  it('names every planted fault at its op with its cause; benign runs name none', async () => {
    const engine = await Engine.create(nodeGpu(), nodeShaderSource());
    engines.push(engine);
    const dir = join(ROOT, model);
    await engine.loadModel({
      config: readFileSync(join(dir, 'config.json'), 'utf8'),
      weights: new Uint8Array(readFileSync(join(dir, 'model.safetensors'))),
      name: model,
    });
    for (const r of manifest.runs.filter((x) => x.model === model)) {
      const bytes = new Uint8Array(readFileSync(join(ROOT, r.file)));
      async function* one() {
        yield bytes;
      }
      const file = await readRunFile(one(), bytes.length, engine.modelInfo!.config, { file: r.file });
      const report = await analyzeRuns(engine, { file, sha256: null }, null);
      const f = report.findings[0];
      const msg = `${r.file}: ${f.sentence}`;
      if (!r.fault) {
        expect(f.diverged, msg).toBe(false);
        expect(f.cause ?? null, msg).toBeNull();
        continue;
      }
      expect(f.diverged, msg).toBe(true);
      expect(f.layer, msg).toBe(r.fault.layer);
      expect(report.checks.find((c) => c.id === f.check)?.op, msg).toBe(r.fault.op);
      expect(r.fault.cause, msg).toContain(f.cause?.named[0]?.id);
      expect(f.sentence, msg).toContain(`probable cause: ${f.cause!.words}`);
    }
  });
});
