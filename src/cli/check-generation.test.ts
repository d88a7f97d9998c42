// The CLI's exit codes cover the generated text: `check` and `compare` exit 1 on a compare whose prompt agrees but
// whose generation diverges (the decode-only teaching fault), with the headline "generation diverged: …" in their
// last line, ending with the cause named at the decode's op, and the report's verdict 'generation-diverged' (the
// decode check started by itself, no flag); a clean generation exits 0. The test writes a small HF-format model folder itself and runs the CLI bundle in a child.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import schema from '../../docs/report.schema.json';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import type { RunSpec } from '../run/runspec';
import { cliArgs, cliEnv } from './testing';

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [...cliArgs(), ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    env: cliEnv(),
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const seed = freshSeed();

function setup(faults: RunSpec['faults']) {
  const dir = mkdtempSync(join(tmpdir(), 'neox-gen-'));
  const files = randomModelFiles(
    { vocab: 97, d: 48, layers: 2, heads: 2, ff: 96, rotaryPct: 0.5, parallel: true },
    seed,
  );
  writeFileSync(join(dir, 'config.json'), files.config);
  writeFileSync(join(dir, 'model.safetensors'), files.weights);
  const spec: RunSpec = {
    version: 1,
    model: { kind: 'embedded', id: 'test' },
    prompt: { tokens: [3, 14, 15, 92, 65, 35, 89, 79, 32] },
    generate: 4,
    precision: 'fp32',
    fused: ['layernorm', 'qkv_rotary', 'flash_attention', 'gemm', 'linear_gelu', 'residual_epilogue'],
    faults,
    seed: 7,
    k: 10,
    metric: 'relL2',
  };
  const file = join(dir, 'spec.json');
  writeFileSync(file, JSON.stringify(spec));
  return { dir, file };
}

describe('cli check and compare on the generated text', () => {
  it('exit 1 where the prompt agrees and the generation diverges, 0 on a clean generation', () => {
    const bad = setup([{ id: 'decode_rotary', fromLayer: 1 }]);
    const check = cli(['check', '--spec', bad.file, '--model', bad.dir]);
    const ctx = `seed ${seed}: ${check.stdout}\n${check.stderr}`;
    expect(check.code, ctx).toBe(1);
    expect(check.stdout, ctx).toMatch(
      /^generation diverged: the prompt agrees \(no layer exceeds 10 × the noise floor\); generation diverges at decode step 1: born at decode step 1 \(position 9\), layer 1, /m,
    );
    // The one line ends with the cause at the decode's op: rotated as position 0 from decode step 1 on (rotary on
    // none of a head's dims is the same arithmetic there, named beside it).
    expect(check.stdout, ctx).toMatch(
      /^generation diverged: .*; probable cause: .*every row from decode step 1 \(position 9\) on rotated as position 0 \[rotary-offset\]/m,
    );
    // Every layer of the prompt agrees: no layer line says DIVERGED.
    expect(check.stdout, ctx).not.toContain('DIVERGED');

    const out = join(bad.dir, 'report.json');
    const compare = cli(['compare', '--spec', bad.file, '--model', bad.dir, '--out', out]);
    expect(compare.code, `seed ${seed}: ${compare.stderr}`).toBe(1);
    const report = JSON.parse(readFileSync(out, 'utf8'));
    expect(report.verdict).toBe('generation-diverged');
    expect(report.firstDivergentLayer).toBeNull();
    expect(report.generation.verdict).toBe('diverged');
    expect(report.generation.decodeStarted).toBe('auto');
    const fused = report.generation.decode.find((d: { path: string }) => d.path === 'fused');
    expect(fused.born.step, fused.sentence).toBe(1);
    expect(fused.born.layer, fused.sentence).toBe(1);
    expect(
      fused.cause.named.map((c: { id: string }) => c.id),
      fused.sentence,
    ).toContain('rotary-offset');
    const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);
    expect(validate(report), JSON.stringify(validate.errors)).toBe(true);

    const clean = setup([]);
    const ok = cli(['check', '--spec', clean.file, '--model', clean.dir]);
    expect(ok.code, `seed ${seed}: ${ok.stdout}\n${ok.stderr}`).toBe(0);
    expect(ok.stdout).toMatch(/^agree: no layer exceeds 10 × the noise floor$/m);
    expect(ok.stdout).toMatch(/^generation: both paths generate the same 4 tokens$/m);
  }, 120_000);
});
