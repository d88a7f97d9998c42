// Hostile input against the CLI, one class per test: every case exits 2 (bad input) with exactly one line on
// stderr naming what is wrong, and the cases knowable from the files and the spec exit before the GPU is used
// (no "analysis…" progress line). Model folders are written fresh per test from a seeded random model.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { randomConfigJson, randomModelFiles, randomTensors } from '../model/random-model';
import { parseSafetensorsHeader } from '../model/safetensors';
import { writeSafetensors } from '../model/safetensors-write';
import { cliArgs, cliEnv } from './testing';

const SPEC = {
  vocab: 97,
  d: 16,
  layers: 2,
  heads: 2,
  ff: 40,
  rotaryPct: 0.25,
  parallel: false,
  dtype: 'F32',
} as const;

function cli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [...cliArgs(), ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    env: cliEnv(env),
  });
  const stderr = r.stderr.split('\n').filter((l) => l && !l.startsWith('npm warn'));
  return { code: r.status, stdout: r.stdout, stderr, timedOut: r.error !== undefined };
}

/** Exit 2 and exactly one line on stderr, which matches `pattern`. */
function expectRefused(r: ReturnType<typeof cli>, pattern: RegExp) {
  expect(r.timedOut, 'the CLI hung').toBe(false);
  expect(r.code, r.stderr.join('\n')).toBe(2);
  expect(r.stderr, r.stderr.join('\n')).toHaveLength(1);
  expect(r.stderr[0]).toMatch(/^error: /);
  expect(r.stderr[0]).toMatch(pattern);
}

function modelDir(seed = 1, maxPos?: number) {
  const dir = mkdtempSync(join(tmpdir(), 'neox-hostile-'));
  const files = randomModelFiles({ ...SPEC, maxPos }, seed);
  writeFileSync(join(dir, 'config.json'), files.config);
  writeFileSync(join(dir, 'model.safetensors'), files.weights);
  return { dir, files };
}

function spec(over: Record<string, unknown> = {}) {
  return {
    version: 1,
    model: { kind: 'embedded', id: 'neox-kjv-bytes' },
    prompt: { tokens: [3, 14, 15, 92] },
    generate: 0,
    precision: 'fp32',
    fused: ['layernorm', 'qkv_rotary', 'flash_attention', 'gemm', 'linear_gelu', 'residual_epilogue'],
    faults: [],
    seed: 7,
    k: 10,
    metric: 'relL2',
    ...over,
  };
}

function writeSpec(dir: string, text: string): string {
  const p = join(dir, 'spec.json');
  writeFileSync(p, text);
  return p;
}

describe('CLI: files that are not regular files, and file-system errors', () => {
  it('a named pipe as model.safetensors is refused at once (never opened, so no hang)', () => {
    const { dir } = modelDir();
    const p = join(dir, 'model.safetensors');
    execFileSync('rm', [p]);
    execFileSync('mkfifo', [p]);
    const r = cli(['forward', '--model', dir, '--tokens', '1', '--out', join(dir, 'o.json')]);
    expectRefused(r, /model\.safetensors': is a named pipe, expected a regular file/);
  });

  it('a folder where a file should be, a missing folder and a path through a file are bad input', () => {
    const { dir } = modelDir();
    const cfg = join(dir, 'config.json');
    execFileSync('rm', [cfg]);
    mkdirSync(cfg);
    const out = join(dir, 'o.json');
    expectRefused(
      cli(['forward', '--model', dir, '--tokens', '1', '--out', out]),
      /config\.json': is a folder/,
    );
    expectRefused(
      cli(['forward', '--model', join(dir, 'missing'), '--tokens', '1', '--out', out]),
      /missing': does not exist/,
    );
    const other = modelDir();
    expectRefused(
      cli(['forward', '--model', join(other.dir, 'config.json', 'x'), '--tokens', '1', '--out', out]),
      /a part of the path is not a folder/,
    );
  });

  it('--out is checked before any work: missing folder, a folder, a path through a file', () => {
    const { dir } = modelDir();
    const s = writeSpec(dir, JSON.stringify(spec()));
    for (const [out, pattern] of [
      [join(dir, 'nope', 'r.json'), /its folder .* does not exist/],
      [dir, /is a folder, expected a regular file/],
      [join(dir, 'config.json', 'r.json'), /is not a folder/],
    ] as const) {
      const r = cli(['compare', '--spec', s, '--model', dir, '--out', out]);
      expectRefused(r, pattern);
      expect(r.stdout).toBe('');
    }
  });
});

describe('CLI: limits known from the spec and the config, before the GPU', () => {
  it('prompt + generate past max_position_embeddings, a fault layer past the model, a token past the vocabulary', () => {
    const { dir } = modelDir(1, 16);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ generate: 13 }, /needs 17 positions, more than the model's max_position_embeddings 16/],
      [
        { faults: [{ id: 'dropped_bias', fromLayer: 999 }] },
        /fault 'dropped_bias' starts at layer 999 but the model has 2 layers/,
      ],
      [
        { prompt: { tokens: [1, 97] } },
        /prompt token 1 is 97, outside the model's vocabulary \(ids 0\.\.96\)/,
      ],
    ];
    for (const [over, pattern] of cases) {
      const r = cli(['check', '--spec', writeSpec(dir, JSON.stringify(spec(over))), '--model', dir]);
      expectRefused(r, pattern);
    }
  });

  it('a UTF-8 BOM is accepted in config.json and the spec (the run gets as far as the limit check)', () => {
    const { dir, files } = modelDir();
    writeFileSync(join(dir, 'config.json'), `\uFEFF${files.config}`);
    const text = `\uFEFF${JSON.stringify(spec({ faults: [{ id: 'gelu_relu', fromLayer: 2 }] }))}`;
    const r = cli(['check', '--spec', writeSpec(dir, text), '--model', dir]);
    expectRefused(r, /fault 'gelu_relu' starts at layer 2 but the model has 2 layers/);
  });

  it('a deeply nested tokenizer.json is refused naming the file (no stack overflow)', () => {
    const { dir } = modelDir();
    writeFileSync(join(dir, 'tokenizer.json'), `{"model":${'['.repeat(100000)}${']'.repeat(100000)}}`);
    const r = cli(['forward', '--model', dir, '--prompt', 'hi', '--out', join(dir, 'o.json')]);
    expectRefused(r, /^error: tokenizer\.json: JSON is nested 100001 levels deep, more than the 64/);
  });
});

describe('CLI: one line per error, user text escaped', () => {
  it('newlines and control characters in user text stay on one line', () => {
    const { dir } = modelDir();
    const evil = 'warp\n    at Object.<anonymous> (/x.js:1:1)\u001b[31m';
    const r = cli(['forward', '--model', dir, '--tokens', '1', '--out', join(dir, 'o.json'), '--path', evil]);
    expectRefused(r, /--path "warp\\n {4}at Object\.<anonymous> \(\/x\.js:1:1\)\\u001b\[31m": expected/);
    const bad = cli(['check', '--spec', writeSpec(dir, '{"version":\n\n1,,}'), '--model', dir]);
    expectRefused(bad, /not valid JSON/);
    expectRefused(cli([`fro\nbnicate`]), /unknown command "fro\\nbnicate"/);
  });
});

describe("CLI: the GPU driver's own output", () => {
  it("with no Vulkan driver, Dawn's warnings stay out of the one error line (exit 3); --verbose shows them", () => {
    const { dir } = modelDir();
    const s = writeSpec(dir, JSON.stringify(spec()));
    const noDriver = { VK_ICD_FILENAMES: join(dir, 'no-such-icd.json') };
    const r = cli(['check', '--spec', s, '--model', dir], noDriver);
    expect(r.code, r.stderr.join('\n')).toBe(3);
    expect(r.stderr, r.stderr.join('\n')).toHaveLength(1);
    expect(r.stderr[0]).toMatch(/^error: .*adapter/);
    const v = cli(['check', '--spec', s, '--model', dir, '--verbose'], noDriver);
    expect(v.code).toBe(3);
    expect(v.stderr.length, 'the driver said nothing: this test no longer tests anything').toBeGreaterThan(1);
    expect(v.stderr.at(-1)).toBe(r.stderr[0]);
  });
});

describe('CLI: model files the format or the loader refuses', () => {
  it('NaN / Inf weights are refused at load, naming the tensor and the count', () => {
    const { dir, files } = modelDir(3);
    const h = parseSafetensorsHeader(files.weights);
    const e = h.entries.get('gpt_neox.layers.1.mlp.dense_4h_to_h.bias')!;
    const bytes = files.weights.slice();
    const dv = new DataView(bytes.buffer);
    dv.setFloat32(h.dataOffset + e.begin + 4, Number.NaN, true);
    dv.setFloat32(h.dataOffset + e.begin + 12, Number.POSITIVE_INFINITY, true);
    writeFileSync(join(dir, 'model.safetensors'), bytes);
    const r = cli(['forward', '--model', dir, '--tokens', '1,2', '--out', join(dir, 'o.json')]);
    expectRefused(
      r,
      /tensor 'gpt_neox\.layers\.1\.mlp\.dense_4h_to_h\.bias' holds 2 non-finite values \(NaN or ±Inf\) of 16; the first at index 1 is NaN/,
    );
  });

  it('a duplicate tensor name and unlisted trailing bytes are refused', () => {
    const { dir } = modelDir();
    const w = writeSafetensors([
      { name: 'a', dtype: 'F32', shape: [1], data: new Float32Array(1) },
      { name: 'b', dtype: 'F32', shape: [1], data: new Float32Array(1) },
    ]);
    const n = new DataView(w.buffer).getUint32(0, true);
    const text = new TextDecoder().decode(w.subarray(8, 8 + n)).replace('"b"', '"a"');
    const dup = new Uint8Array(w.length);
    dup.set(w);
    dup.set(new TextEncoder().encode(text), 8);
    writeFileSync(join(dir, 'model.safetensors'), dup);
    const out = join(dir, 'o.json');
    expectRefused(
      cli(['forward', '--model', dir, '--tokens', '1', '--out', out]),
      /header entry 'a' appears twice/,
    );
    const good = modelDir();
    const longer = Buffer.concat([readFileSync(join(good.dir, 'model.safetensors')), Buffer.from([0, 0, 0])]);
    writeFileSync(join(good.dir, 'model.safetensors'), longer);
    expectRefused(
      cli(['forward', '--model', good.dir, '--tokens', '1', '--out', out]),
      /\(3 trailing bytes\)/,
    );
  });
});

describe('CLI: a dump that holds NaN or Inf', () => {
  it('forward refuses to write it (exit 1, one line, nothing written) unless --nonfinite-as-strings', () => {
    // Finite weights that overflow fp32 in layer 1: attention and MLP output biases of channel 3 at 3e38 each, so
    // x + attn + mlp is +Inf (parallel residual) while every weight is finite and loads.
    const dir = mkdtempSync(join(tmpdir(), 'neox-overflow-'));
    const spec = { ...SPEC, parallel: true };
    const tensors = randomTensors(spec, 9);
    for (const name of ['attention.dense.bias', 'mlp.dense_4h_to_h.bias'])
      (tensors.find((t) => t.name === `gpt_neox.layers.1.${name}`)!.data as Float32Array)[3] = 3e38;
    writeFileSync(join(dir, 'config.json'), JSON.stringify(randomConfigJson(spec)));
    writeFileSync(join(dir, 'model.safetensors'), writeSafetensors(tensors, { format: 'pt' }));
    const out = join(dir, 'o.json');
    const refused = cli(['forward', '--model', dir, '--tokens', '1,2,3', '--out', out]);
    expect(refused.code, refused.stderr.join('\n')).toBe(1);
    expect(refused.stderr).toHaveLength(1);
    expect(refused.stderr[0]).toMatch(/non-finite values \(first: layers\[1\]/);
    expect(() => readFileSync(out)).toThrow();
    const written = cli([
      'forward',
      '--model',
      dir,
      '--tokens',
      '1,2,3',
      '--out',
      out,
      '--nonfinite-as-strings',
    ]);
    expect(written.code, written.stderr.join('\n')).toBe(0);
    const dump = JSON.parse(readFileSync(out, 'utf8'));
    const cells: unknown[] = dump.layers[1].flat();
    expect(cells).toContain('Infinity');
    expect(JSON.stringify(dump)).not.toContain('null');
  });
});
