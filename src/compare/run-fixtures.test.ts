// The runs PyTorch made (src/model/testdata/runs/, tools/run_fixtures.py; transformers 5.17 on an H100 and on the
// CPU): every planted fault is named at its layer and op, clean runs on GPU and CPU agree (alone and as a pair),
// hidden-states-only runs name the layer, TransformerLens-named runs land on the same checks.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { readRunFile } from '../model/run-file';
import { analyzeRuns, type RunInput } from './analyze-runs';

const ROOT = 'src/model/testdata/runs';
/** The cause each planted fault is (the cause library's id). */
const CAUSE: Record<string, string> = {
  'residual-bf16': 'output-bf16',
  'gptj-rotary': 'rotary-gptj',
  'unscaled-softmax': 'softmax-scale',
  'tanh-gelu': 'gelu-tanh',
  'ln-eps-outside': 'ln-eps-outside',
  tf32: 'tf32',
};
interface Entry {
  file: string;
  model: string;
  kind: 'modules' | 'hidden-states' | 'transformer-lens';
  fault: { id: string; layer: number; op: string } | null;
}
const manifest = JSON.parse(readFileSync(join(ROOT, 'manifest.json'), 'utf8')) as { runs: Entry[] };
const models = [...new Set(manifest.runs.map((r) => r.model))];
const engines: Engine[] = [];
afterAll(() => {
  for (const e of engines) e.dispose();
});

async function load(model: string) {
  const engine = await Engine.create(nodeGpu(), nodeShaderSource());
  engines.push(engine);
  const dir = join(ROOT, model);
  await engine.loadModel({
    config: readFileSync(join(dir, 'config.json'), 'utf8'),
    weights: new Uint8Array(readFileSync(join(dir, 'model.safetensors'))),
    name: model,
  });
  const read = async (file: string): Promise<RunInput> => {
    const bytes = new Uint8Array(readFileSync(join(ROOT, file)));
    async function* one() {
      yield bytes;
    }
    return { file: await readRunFile(one(), bytes.length, engine.modelInfo!.config, { file }), sha256: null };
  };
  return { engine, read };
}

describe.each(models)('runs made in PyTorch: %s', (model) => {
  const runs = manifest.runs.filter((r) => r.model === model);

  it('names every planted fault at its layer and op; clean runs agree', async () => {
    const { engine, read } = await load(model);
    for (const r of runs) {
      const report = await analyzeRuns(engine, await read(r.file), null);
      const f = report.findings[0];
      if (!r.fault) {
        expect(f.diverged, `${r.file}: ${f.sentence}`).toBe(false);
        continue;
      }
      expect(f.diverged, `${r.file}: ${f.sentence}`).toBe(true);
      expect(f.layer, `${r.file}: ${f.sentence}`).toBe(r.fault.layer);
      const check = report.checks.find((c) => c.run === 'A' && c.id === f.check)!;
      const op = r.kind === 'hidden-states' ? 'layer' : r.fault.op;
      expect(check.op, `${r.file}: ${f.sentence}`).toBe(op);
      expect(f.anatomy?.sentence, r.file).toMatch(/^The error is (in|from) /);
      if (r.kind === 'hidden-states') continue;
      // The cause is named, first, and said in the one line after "probable cause:".
      expect(f.cause?.named[0]?.id, `${r.file}: ${f.sentence}`).toBe(CAUSE[r.fault.id]);
      expect(f.sentence).toContain(`probable cause: ${f.cause!.words}`);
    }
  });

  it('clean runs stored in bf16 and fp16 agree (their floor is their own dtype rounding)', async () => {
    const { engine, read } = await load(model);
    for (const dt of ['bf16', 'fp16']) {
      const report = await analyzeRuns(engine, await read(`${model}/clean-cuda-${dt}.run.safetensors`), null);
      expect(report.verdict, report.sentence).toBe('agree');
      expect(report.runs[0].storage).toBe(dt === 'bf16' ? 'BF16' : 'F16');
      expect(report.checks.length).toBeGreaterThan(20);
    }
  });

  it('a clean GPU run against a clean CPU run: both agree, B vs A within the floor', async () => {
    const { engine, read } = await load(model);
    const file = (id: string) => runs.find((r) => r.file.endsWith(`/${id}.run.safetensors`))!.file;
    const report = await analyzeRuns(engine, await read(file('clean-cuda')), await read(file('clean-cpu')));
    expect(report.verdict, report.sentence).toBe('agree');
    for (const c of report.curves) expect(c.bVsA?.diverged, c.slot).toBe(false);
  });
});
