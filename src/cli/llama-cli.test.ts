// The CLI on Llama-family model folders (the committed HF fixtures, src/model/testdata/llama): `forward` writes the
// dump contract from either path within 1e-5 (relative L2) of HF's fp64 hidden states, `generate --json` gives
// HF's greedy ids on both paths, and what the family does not have yet exits 2 with one line.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StandIn, startHubServer } from '../../e2e/hub-server';
import { basicMetrics } from '../compare/metrics';
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

/** The CLI run asynchronously (the stand-in Hub answers from this process meanwhile). */
async function cliAsync(args: string[], env: Record<string, string>) {
  const { spawn } = await import('node:child_process');
  return new Promise<{ code: number | null; stderr: string[] }>((done) => {
    const p = spawn(process.execPath, [...cliArgs(), ...args], { env: cliEnv(env) });
    let err = '';
    p.stderr.on('data', (d) => {
      err += d;
    });
    p.on('close', (code) =>
      done({ code, stderr: err.split('\n').filter((l) => l && !l.startsWith('npm warn')) }),
    );
  });
}

let hub: StandIn;
beforeAll(async () => {
  hub = await startHubServer();
});
afterAll(async () => {
  await hub?.close();
});

interface HfOutputs {
  tokens: number[];
  fp64: { embeddings: number[][]; layers: number[][][]; final_norm: number[][]; logits: number[][] };
  greedy: { prompt: number[]; new_ids: number[] };
}

const FIXTURES = 'src/model/testdata/llama';
const hfOf = (name: string) =>
  JSON.parse(readFileSync(join(FIXTURES, name, 'hf_outputs.json'), 'utf8')) as HfOutputs;

describe('cli on a Llama-family model folder', () => {
  // Two fixtures of different flavours and dtypes (the engine test covers all five): the CLI's own path is the
  // same whatever the flavour. HF's fp64 is fp32 in places (docs/FAMILIES.md): 1e-5 is the family's target.
  it.each([
    ['qwen3-qknorm', 'reference'],
    ['llama-gqa-llama3', 'fused'],
  ])('forward %s --path %s: the dump contract within 1e-5 of HF fp64', (name, path) => {
    const hf = hfOf(name);
    const out = join(mkdtempSync(join(tmpdir(), 'llama-cli-')), 'dump.json');
    const dir = join(FIXTURES, name);
    const r = cli(['forward', '--model', dir, '--tokens', hf.tokens.join(','), '--path', path, '--out', out]);
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const dump = JSON.parse(readFileSync(out, 'utf8')) as DumpJson;
    expect(Object.keys(dump).sort()).toEqual(['embeddings', 'final_norm', 'layers', 'logits']);
    expect(dump.layers).toHaveLength(hf.fp64.layers.length);
    const pairs = [
      ['embeddings', dump.embeddings, hf.fp64.embeddings],
      ...hf.fp64.layers.map((l, i) => [`layers[${i}]`, dump.layers[i], l] as const),
      ['final_norm', dump.final_norm, hf.fp64.final_norm],
      ['logits', dump.logits, hf.fp64.logits],
    ] as const;
    for (const [what, got, want] of pairs)
      expect(basicMetrics(got.flat(), want.flat()).relL2, `${name} ${what}`).toBeLessThan(1e-5);
  });

  it('forward --hub: a Llama-family repository downloaded into the cache (the stand-in Hub) gives HF parity', async () => {
    const hf = hfOf('qwen2-bias'); // the stand-in's Qwen/Qwen2.5-0.5B (e2e/hub-repos.ts LLAMA_FIXTURE_OF)
    const cache = mkdtempSync(join(tmpdir(), 'llama-hub-'));
    const out = join(cache, 'dump.json');
    const env = { HF_ENDPOINT: hub.origin, HF_HUB_CACHE: cache };
    const args = [
      'forward',
      '--hub',
      'Qwen/Qwen2.5-0.5B',
      '--tokens',
      hf.tokens.join(','),
      '--path',
      'fused',
    ];
    const r = await cliAsync([...args, '--out', out], env);
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const dump = JSON.parse(readFileSync(out, 'utf8')) as DumpJson;
    expect(basicMetrics(dump.logits.flat(), hf.fp64.logits.flat()).relL2).toBeLessThan(1e-5);
  });

  it.each(['reference', 'fused'])('generate --path %s --json: HF greedy ids', (path) => {
    const hf = hfOf('qwen2-bias');
    const n = hf.greedy.new_ids.length;
    const dir = join(FIXTURES, 'qwen2-bias');
    const r = cli([
      'generate',
      '--model',
      dir,
      '--tokens',
      hf.greedy.prompt.join(','),
      '--n',
      `${n}`,
      '--path',
      path,
      '--json',
    ]);
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const got = JSON.parse(r.stdout) as { promptIds: number[]; newIds: number[] };
    expect(got.promptIds).toEqual(hf.greedy.prompt);
    expect(got.newIds).toEqual(hf.greedy.new_ids);
  });

  it('check: a clean spec exits 0, the KV-mapping fault exits 1 at layer 0, the flash attention named', () => {
    const hf = hfOf('qwen2-bias');
    const dir = join(FIXTURES, 'qwen2-bias');
    const tmp = mkdtempSync(join(tmpdir(), 'llama-cli-'));
    const spec = (faults: { id: string; fromLayer?: number }[]) => {
      const file = join(tmp, `spec-${faults.length}.json`);
      const fused = [
        'layernorm',
        'qkv_rotary',
        'flash_attention',
        'gemm',
        'linear_gelu',
        'residual_epilogue',
      ];
      const s = {
        version: 1,
        model: { kind: 'embedded', id: 'neox-kjv-bytes' },
        prompt: { tokens: hf.greedy.prompt },
      };
      writeFileSync(
        file,
        JSON.stringify({
          ...s,
          generate: 3,
          precision: 'fp32',
          fused,
          faults,
          seed: 1,
          k: 10,
          metric: 'relL2',
        }),
      );
      return file;
    };
    const ok = cli(['check', '--spec', spec([]), '--model', dir]);
    expect(ok.code, ok.stderr.join('\n')).toBe(0);
    expect(ok.stdout).toMatch(/^agree: /m);
    const bad = cli(['check', '--spec', spec([{ id: 'kv_interleaved', fromLayer: 0 }]), '--model', dir]);
    expect(bad.code, bad.stderr.join('\n')).toBe(1);
    expect(bad.stdout).toMatch(/^layer 0: relL2 .* DIVERGED \(born here\)$/m);
    expect(bad.stdout).toMatch(
      /^why: Layer 0: the error is born at the attention core .* probable cause: KV heads/m,
    );
    expect(bad.stdout).toMatch(
      /^diverged: first divergent layer 0; reproduced by flash_attention from layer 0$/m,
    );
  });

  it('--precision bf16 writes a dump further from HF than fp32, within bf16 rounding; a run of another model exits compare-runs with 2', () => {
    const name = 'mistral-window';
    const hf = hfOf(name);
    const dir = join(FIXTURES, name);
    const out = join(mkdtempSync(join(tmpdir(), 'llama-cli-')), 'dump.json');
    const args = ['forward', '--model', dir, '--tokens', hf.tokens.join(','), '--out', out];
    const r = cli([...args, '--precision', 'bf16']);
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const dump = JSON.parse(readFileSync(out, 'utf8')) as DumpJson;
    const e = basicMetrics(dump.logits.flat(), hf.fp64.logits.flat()).relL2;
    // bf16 keeps 8 significant bits (unit roundoff 2^-8 = 3.9e-3) at every stored tensor through two layers
    expect(e).toBeGreaterThan(1e-5);
    expect(e).toBeLessThan(5e-2);
    const runs = cli([
      'compare-runs',
      '--model',
      dir,
      '--a',
      join(FIXTURES, 'qwen3-qknorm', 'run.safetensors'),
    ]);
    expect(runs.code).toBe(2);
    expect(runs.stderr).toHaveLength(1);
    expect(runs.stderr[0]).toMatch(/another model \(vocabulary 261, this one has 259\): load theirs/);
  });
});
