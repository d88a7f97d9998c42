// `cli compare-runs` on a Llama-family model folder (a committed HF fixture), end to end in a child process: a clean
// run A and run B with the SwiGLU's gate and up swapped at a drawn layer (compare/family-runs-synth.testdata.ts) → exit 1 and
// one line naming run B's layer, the dump's module path and the cause, the report written with the family; run A
// alone → exit 0; a run of another model of the family → exit 2 and the other-model line.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { synthFamilyRun } from '../compare/family-runs-synth.testdata';
import { freshSeed } from '../kernels/testing';
import { loadLlamaWeights } from '../model/llama-weights';
import { parseModelConfigText } from '../model/model-config';
import { mulberry32 } from '../numeric/random';
import { runCli } from './testing';

const cli = runCli;

const FIXTURES = 'src/model/testdata/llama';

describe('cli compare-runs on a Llama-family model', () => {
  it('names run B layer, module and cause (exit 1); A alone agrees (exit 0); another model exits 2', () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const model = join(FIXTURES, 'llama-gqa-llama3');
    const cfg = parseModelConfigText(readFileSync(join(model, 'config.json'), 'utf8'));
    if (cfg.family !== 'llama') throw new Error('not a Llama-family fixture');
    const w = loadLlamaWeights(cfg, new Uint8Array(readFileSync(join(model, 'model.safetensors'))));
    const dir = mkdtempSync(join(tmpdir(), 'llama-runs-'));
    const tokens = Array.from({ length: 9 }, () => Math.floor(rng() * cfg.vocabSize));
    const j = Math.floor(rng() * cfg.numLayers);
    writeFileSync(join(dir, 'a.safetensors'), synthFamilyRun(cfg, w, tokens, { label: 'clean' }));
    const plant = { layer: j, slot: 'swiglu', id: 'swiglu-swapped' };
    writeFileSync(join(dir, 'b.safetensors'), synthFamilyRun(cfg, w, tokens, { plant, dtype: 'BF16' }));
    const out = join(dir, 'report.json');
    const args = ['compare-runs', '--model', model, '--a', join(dir, 'a.safetensors')];
    const r = cli([...args, '--b', join(dir, 'b.safetensors'), '--out', out]);
    expect(r.code, `${r.stderr.join('\n')} (seed ${seed})`).toBe(1);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    expect(r.stdout).toContain('run A (clean) agrees with the exact forward');
    expect(r.stdout, `seed ${seed}`).toContain(
      `run B, layer ${j}: the SwiGLU product (model.layers.${j}.mlp)`,
    );
    expect(r.stdout).toContain('probable cause: gate and up are swapped');
    const report = JSON.parse(readFileSync(out, 'utf8'));
    expect(report.schema).toBe('divergence-runs-report/1');
    expect(report.model.family).toBe('llama');
    expect(report.runs.map((x: { sha256: string }) => x.sha256.length)).toEqual([64, 64]);
    expect(report.findings[1].cause.named[0].id).toBe('swiglu-swapped');
    const alone = cli(args);
    expect(alone.code, alone.stderr.join('\n')).toBe(0);
    const other = cli([...args.slice(0, 3), '--a', join(FIXTURES, 'qwen3-qknorm', 'run.safetensors')]);
    expect(other.code).toBe(2);
    expect(other.stderr).toHaveLength(1);
    expect(other.stderr[0]).toMatch(/another model \(vocabulary 261, this one has 131\): load theirs/);
  });
});
