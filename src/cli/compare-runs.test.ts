// `cli compare-runs` end to end in a child process: a clean run A and run B with a bf16 residual add planted at a
// random layer (src/compare/run-synth.ts) → exit 1 and one line naming run B's layer and op, the report written;
// runs of two different prompts → exit 2 and one line (the GPU comes up meanwhile; nothing of it is said).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { synthRun } from '../compare/run-synth';
import { freshSeed } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { randomModelFiles } from '../model/random-model';
import { loadWeights } from '../model/weights';
import { mulberry32 } from '../numeric/random';
import { runCli } from './testing';

const cli = runCli;

describe('cli compare-runs', () => {
  it('names run B layer and op (exit 1); runs of other prompts are refused in one line (exit 2)', () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const dir = mkdtempSync(join(tmpdir(), 'runs-'));
    const shape = { vocab: 61, d: 24, layers: 3, heads: 2, ff: 40, rotaryPct: 0.5, parallel: true };
    const files = randomModelFiles(shape, seed);
    writeFileSync(join(dir, 'config.json'), files.config);
    writeFileSync(join(dir, 'model.safetensors'), files.weights);
    const cfg = parseConfigText(files.config);
    const w = loadWeights(cfg, files.weights);
    const tokens = Array.from({ length: 11 }, () => Math.floor(rng() * shape.vocab));
    const j = Math.floor(rng() * shape.layers);
    writeFileSync(join(dir, 'a.safetensors'), synthRun(cfg, w, tokens, { label: 'clean' }));
    writeFileSync(
      join(dir, 'b.safetensors'),
      synthRun(cfg, w, tokens, { fault: { kind: 'residual-bf16', layer: j } }),
    );
    const other = tokens.map((t, i) => (i === 4 ? (t + 1) % shape.vocab : t));
    writeFileSync(join(dir, 'c.safetensors'), synthRun(cfg, w, other));
    const out = join(dir, 'report.json');
    const args = ['compare-runs', '--model', dir, '--a', join(dir, 'a.safetensors')];
    const r = cli([...args, '--b', join(dir, 'b.safetensors'), '--out', out]);
    expect(r.code, `${r.stderr.join('\n')} (seed ${seed})`).toBe(1);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    expect(r.stdout, `seed ${seed}`).toContain(`run B, layer ${j}: the residual add`);
    expect(r.stdout).toContain('run A (clean) agrees with the exact forward');
    const report = JSON.parse(readFileSync(out, 'utf8'));
    expect(report.schema).toBe('divergence-runs-report/1');
    expect(report.runs.map((x: { sha256: string }) => x.sha256.length)).toEqual([64, 64]);
    const bad = cli([...args, '--b', join(dir, 'c.safetensors')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toHaveLength(1);
    expect(bad.stderr[0]).toMatch(/^error: c\.safetensors: run B is of other tokens than run A .*position 4/);
  });
});
