// The CLI end to end: the test writes a small HF-format model folder itself, runs `cli forward` in a child
// process and checks the dump contract (keys, nested shapes, values vs the fp64 oracle); bad input exits 2
// with one line naming what is wrong.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { basicMetrics } from '../compare/metrics';
import { oracleForward } from '../kernels/cpu/forward';
import { freshSeed } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { randomModelFiles } from '../model/random-model';
import { loadWeights } from '../model/weights';
import { roundStorage } from '../numeric/precision';
import type { DumpJson } from './dump-json';
import { cliArgs, cliEnv } from './testing';

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [...cliArgs(), ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    env: cliEnv(),
  });
  return {
    code: r.status,
    stdout: r.stdout,
    stderr: r.stderr.split('\n').filter((l) => l && !l.startsWith('npm warn')),
  };
}

function modelDir(seed: number) {
  const dir = mkdtempSync(join(tmpdir(), 'neox-'));
  const files = randomModelFiles(
    { vocab: 211, d: 48, layers: 2, heads: 2, ff: 100, rotaryPct: 0.25, parallel: false, dtype: 'F16' },
    seed,
  );
  writeFileSync(join(dir, 'config.json'), files.config);
  writeFileSync(join(dir, 'model.safetensors'), files.weights);
  return { dir, files };
}

describe('cli forward', () => {
  it('writes the dump contract for a model folder, matching the oracle', () => {
    const seed = freshSeed();
    const { dir, files } = modelDir(seed);
    const out = join(dir, 'out.json');
    const tokens = [3, 14, 15, 92, 65, 35, 89];
    const r = cli(['forward', '--model', dir, '--tokens', tokens.join(','), '--out', out]);
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const dump = JSON.parse(readFileSync(out, 'utf8')) as DumpJson;
    expect(Object.keys(dump).sort()).toEqual(['embeddings', 'final_norm', 'layers', 'logits']);
    expect(dump.embeddings).toHaveLength(7);
    expect(dump.embeddings[0]).toHaveLength(48);
    expect(dump.layers).toHaveLength(2);
    expect(dump.layers[1]).toHaveLength(7);
    expect(dump.logits[6]).toHaveLength(211);
    const cfg = parseConfigText(files.config);
    const ref = oracleForward(cfg, loadWeights(cfg, files.weights), tokens);
    const flat = (a: number[][]) => a.flat();
    for (const [what, got, want] of [
      ['embeddings', flat(dump.embeddings), ref.embeddings],
      ['layers[1]', flat(dump.layers[1]), ref.layers[1]],
      ['final_norm', flat(dump.final_norm), ref.finalNorm],
      ['logits', flat(dump.logits), ref.logits],
    ] as const) {
      expect(basicMetrics(got, want).relL2, `${what} seed ${seed}`).toBeLessThan(1e-5);
    }
  });

  it('--path fused --precision fp16 writes the same contract, rounded to fp16, close to the reference', () => {
    const seed = freshSeed();
    const { dir } = modelDir(seed);
    const [a, b] = [join(dir, 'a.json'), join(dir, 'b.json')];
    const tokens = '5,6,7,8,9';
    expect(cli(['forward', '--model', dir, '--tokens', tokens, '--out', a]).code).toBe(0);
    const r = cli([
      'forward',
      '--model',
      dir,
      '--tokens',
      tokens,
      '--out',
      b,
      '--path',
      'fused',
      '--precision',
      'fp16',
    ]);
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const ref = JSON.parse(readFileSync(a, 'utf8')) as DumpJson;
    const fused = JSON.parse(readFileSync(b, 'utf8')) as DumpJson;
    const last = fused.layers[1].flat();
    expect(last.every((v) => roundStorage('fp16', v) === v)).toBe(true);
    const e = basicMetrics(last, ref.layers[1].flat()).relL2;
    expect(e, `seed ${seed}`).toBeGreaterThan(1e-6);
    expect(e, `seed ${seed}`).toBeLessThan(1e-2);
  });

  it.each([
    [
      ['forward', '--model', 'MODEL', '--tokens', '1', '--out', '/tmp/x.json', '--path', 'warp'],
      /--path 'warp'/,
    ],
    [
      ['forward', '--model', 'MODEL', '--tokens', '1', '--out', '/tmp/x.json', '--precision', 'fp8'],
      /--precision 'fp8'/,
    ],
    [['forward', '--model', '/nonexistent/dir', '--tokens', '1', '--out', '/tmp/x.json'], /does not exist/],
    [['forward', '--tokens', '1'], /give --model DIR or --hub/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [
      ['forward', '--model', 'MODEL', '--tokens', '1,abc', '--out', '/tmp/x.json'],
      /token id 2 'abc' is not an integer/,
    ],
    [['forward', '--model', 'MODEL', '--tokens', '1,211', '--out', '/tmp/x.json'], /out of range/],
    [['forward', '--model', 'MODEL', '--tokens', '1', '--out', '/tmp/x.json', '--bogus'], /bogus/],
    [
      ['generate', '--model', 'MODEL', '--tokens', '1', '--memory-budget', 'lots'],
      /--memory-budget 'lots': expected a positive number of GiB/,
    ],
    [
      // The model's 0.0002 GiB of weights over a 0.00002 GiB cap: refused before anything is allocated.
      ['generate', '--model', 'MODEL', '--tokens', '1', '--n', '1', '--memory-budget', '0.00002'],
      /the model needs 0\.00 GiB of GPU memory .* more than the 0\.00 GiB budget set for this run; nothing was allocated$/,
    ],
  ])('bad input %j exits 2 with one line', (args, pattern) => {
    const { dir } = modelDir(1);
    const r = cli(args.map((a) => (a === 'MODEL' ? dir : a)));
    expect(r.code).toBe(2);
    expect(r.stderr[0]).toMatch(pattern);
    expect(r.stderr[0]).toMatch(/^error: /);
  });

  it('a corrupted safetensors file exits 2 naming the file', () => {
    const { dir } = modelDir(2);
    const p = join(dir, 'model.safetensors');
    const bytes = readFileSync(p);
    writeFileSync(p, bytes.subarray(0, bytes.length - 100));
    const r = cli(['forward', '--model', dir, '--tokens', '1,2', '--out', join(dir, 'o.json')]);
    expect(r.code).toBe(2);
    expect(r.stderr[0]).toMatch(/^error: model\.safetensors: /);
  });
});

describe('cli compare / check', () => {
  const specFor = (faults: unknown[]) => ({
    version: 1,
    model: { kind: 'embedded', id: 'neox-kjv-bytes' },
    prompt: { tokens: [3, 14, 15, 92, 65, 35, 89, 79, 32, 38] },
    generate: 0,
    precision: 'fp32',
    fused: ['layernorm', 'qkv_rotary', 'flash_attention', 'gemm', 'linear_gelu', 'residual_epilogue'],
    faults,
    seed: 7,
    k: 10,
    metric: 'relL2',
  });

  it('check exits 0 on a clean fused path and 1 on a planted fault, naming layer and kernel', () => {
    const { dir } = modelDir(5);
    const clean = join(dir, 'clean.json');
    const faulty = join(dir, 'faulty.json');
    writeFileSync(clean, JSON.stringify(specFor([])));
    writeFileSync(faulty, JSON.stringify(specFor([{ id: 'dropped_bias', fromLayer: 1 }])));
    const ok = cli(['check', '--spec', clean, '--model', dir]);
    expect(ok.code, ok.stderr.join('\n')).toBe(0);
    expect(ok.stdout).toMatch(/^agree/m);
    const bad = cli(['check', '--spec', faulty, '--model', dir]);
    expect(bad.code, bad.stderr.join('\n')).toBe(1);
    expect(bad.stdout).toMatch(/first divergent layer 1; reproduced by residual_epilogue from layer 1/);
  });

  it('compare writes the report JSON and exits 1 on a divergence', () => {
    const { dir } = modelDir(6);
    const spec = join(dir, 'spec.json');
    const out = join(dir, 'report.json');
    writeFileSync(spec, JSON.stringify(specFor([{ id: 'gelu_relu', fromLayer: 0 }])));
    const r = cli(['compare', '--spec', spec, '--model', dir, '--out', out]);
    expect(r.code, r.stderr.join('\n')).toBe(1);
    const report = JSON.parse(readFileSync(out, 'utf8'));
    expect(report.schema).toBe('divergence-report/1');
    expect(report.verdict).toBe('diverged');
    expect(report.firstDivergentLayer).toBe(0);
    expect(report.layers).toHaveLength(2);
  });

  it.each([
    ['{not json', /not valid JSON/],
    [JSON.stringify({ version: 9 }), /unsupported version 9/],
    [JSON.stringify({ ...specFor([]), k: -1 }), /RunSpec k:/],
    [JSON.stringify({ ...specFor([{ id: 'warp_drive' }]) }), /unknown fault 'warp_drive'/],
  ])('check exits 2 on a bad spec %#', (text, pattern) => {
    const { dir } = modelDir(8);
    const spec = join(dir, 'spec.json');
    writeFileSync(spec, text);
    const r = cli(['check', '--spec', spec, '--model', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr.find((l) => l.startsWith('error:'))).toMatch(pattern);
  });
});
