// Runs of Hugging Face `generate` (src/model/testdata/gen/, tools/gen_fixtures.py with dump_generation; transformers
// 5.17 on an H200 and on the CPU): every decode-path fault planted in PyTorch is found at its decode step, layer and
// op, its cause named on the rows from that step on; the clean pairs (with and without the KV cache, GPU and CPU)
// agree, and so does the fp16 run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { afterAll, describe, expect, it } from 'vitest';
import metadataSchema from '../../docs/run-metadata.schema.json';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { readRunFile } from '../model/run-file';
import { rowWords } from '../model/run-generation';
import { analyzeRuns, type RunInput } from './analyze-runs';

const ROOT = 'src/model/testdata/gen';
const MODELS = 'src/model/testdata/runs';
interface Entry {
  file: string;
  model: string;
  tokens: number[];
  prefill: number;
  generated: number[];
  fault: { id: string; layer: number; op: string; check: string; step: number; position: number } | null;
}
const manifest = JSON.parse(readFileSync(join(ROOT, 'manifest.json'), 'utf8')) as { runs: Entry[] };
/** The cause each planted fault must be named by (docs/CAUSES.md), scored on the rows from its step on. */
const CAUSE_OF: Record<string, string> = {
  'cache-off-by-one': 'kv-positions-moved',
  'rotary-restart': 'rotary-offset',
  'stale-cache': 'kv-positions-dropped',
  'decode-fp16': 'autocast-fp16',
};
const models = [...new Set(manifest.runs.map((r) => r.model))];
const engines: Engine[] = [];
afterAll(() => {
  for (const e of engines) e.dispose();
});

async function load(model: string) {
  const engine = await Engine.create(nodeGpu(), nodeShaderSource());
  engines.push(engine);
  const dir = join(MODELS, model);
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

/** A safetensors file's __metadata__ (the header: a little-endian u64 length, then JSON). */
function metadataOf(file: string): Record<string, string> {
  const bytes = readFileSync(join(ROOT, file));
  const n = Number(bytes.readBigUInt64LE(0));
  return JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')).__metadata__;
}

describe('generation run metadata', () => {
  it('every fixture validates against docs/run-metadata.schema.json; a generated list without prefill does not', () => {
    const validate = new Ajv2020({ allErrors: true, strict: true }).compile(metadataSchema);
    for (const r of manifest.runs) {
      const meta = metadataOf(r.file);
      expect(validate(meta), `${r.file}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(Number(meta.prefill)).toBe(r.prefill);
    }
    const meta = metadataOf(manifest.runs[0].file);
    expect(validate({ ...meta, prefill: undefined })).toBe(false);
    expect(validate({ ...meta, prefill: '0' })).toBe(false);
  });
});

describe.each(models)('runs of generate made in PyTorch: %s', (model) => {
  const runs = manifest.runs.filter((r) => r.model === model);
  const faults = runs.filter((r) => r.fault);
  const file = (id: string) => runs.find((r) => r.file.endsWith(`/${id}.run.safetensors`))!.file;

  it('reads a generation run: all positions, the prefill and the generated ids', async () => {
    const { read } = await load(model);
    const r = runs.find((x) => x.file.endsWith('/clean-cuda.run.safetensors'))!;
    const { file: run } = await read(r.file);
    expect(run.tokens).toEqual(r.tokens);
    expect(run.generation).toEqual({ prefill: r.prefill, generated: r.generated });
    expect(run.tokens.length).toBe(r.prefill + r.generated.length - 1);
    expect(run.slots.get('logits')!.data.length / run.tokens.length).toBe(
      engines.at(-1)!.modelInfo!.config.vocabSize,
    );
  });

  it('finds every planted decode fault at its step, layer and op', async () => {
    expect(faults.length).toBe(4);
    const { engine, read } = await load(model);
    for (const r of faults) {
      const f = r.fault!;
      const report = await analyzeRuns(engine, await read(r.file), null);
      const finding = report.findings[0];
      const ctx = `${r.file}: ${finding.sentence}`;
      expect(finding.diverged, ctx).toBe(true);
      expect(finding.check, ctx).toBe(f.check);
      expect(finding.layer, ctx).toBe(f.layer);
      const check = report.checks.find((c) => c.run === 'A' && c.id === finding.check)!;
      expect(check.op, ctx).toBe(f.op);
      expect(check.firstRow, ctx).toBe(f.position);
      // named from its step: that step alone, or every row from it on (the stretch of rows past said whole)
      const at = rowWords(
        f.position,
        report.runs[0].generation!.prefill,
        check.pastTo!,
        report.tokens.length,
      );
      expect(at, ctx).toContain(`decode step ${f.step} (position ${f.position})`);
      expect(finding.sentence, ctx).toContain(`${at}, layer ${f.layer}: `);
      expect(finding.cause?.named[0]?.id, ctx).toBe(CAUSE_OF[f.id]);
      // Every check sees the prefill clean: no op's error appears before the planted step.
      for (const c of report.checks.filter(
        (x) => x.run === 'A' && x.firstRow !== null && x.firstRow !== undefined,
      ))
        expect(c.firstRow!, `${ctx} (${c.id} from row ${c.firstRow})`).toBeGreaterThanOrEqual(f.position);
    }
  });

  it('benign pairs agree: generate with and without the KV cache, on the GPU and the CPU', async () => {
    const { engine, read } = await load(model);
    for (const b of ['clean-nocache', 'clean-cpu']) {
      const report = await analyzeRuns(engine, await read(file('clean-cuda')), await read(file(b)));
      expect(report.verdict, `${b}: ${report.sentence}`).toBe('agree');
      const bVsA = report.curves.find((c) => c.slot === 'logits')!.bVsA!;
      expect(bVsA.diverged, `${b}: logits B vs A ×${bVsA.ratio}`).toBe(false);
    }
    const half = await analyzeRuns(engine, await read(file('clean-cuda-fp16')), null);
    expect(half.verdict, half.sentence).toBe('agree');
    expect(half.runs[0].storage).toBe('F16');
  });
});
