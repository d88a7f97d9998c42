// `cli check --check-decode` on a Llama-family model folder (a committed HF fixture), end to end in a child process:
// each path's decode is checked op by op as a run of a generation (compare/family-runs-decode.ts); with the fused
// path's KV mapping fault from layer 1 the fused decode's line names layer 1 and the reference path's agrees.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ALL_FUSED } from '../engine/fused-kernels';
import { cliArgs, cliEnv } from './testing';

const DIR = 'src/model/testdata/llama/llama-gqa-llama3';

describe('cli check --check-decode on a Llama-family model', () => {
  it("says each path's decode op by op: the fused one born at layer 1, the reference one agrees", () => {
    const hf = JSON.parse(readFileSync(join(DIR, 'hf_outputs.json'), 'utf8')) as {
      greedy: { prompt: number[] };
    };
    const file = join(mkdtempSync(join(tmpdir(), 'llama-decode-')), 'spec.json');
    writeFileSync(
      file,
      JSON.stringify({
        version: 1,
        model: { kind: 'embedded', id: 'neox-kjv-bytes' },
        prompt: { tokens: hf.greedy.prompt },
        generate: 3,
        precision: 'fp32',
        fused: [...ALL_FUSED],
        faults: [{ id: 'kv_interleaved', fromLayer: 1 }],
        seed: 1,
        k: 10,
        metric: 'relL2',
      }),
    );
    const r = spawnSync(
      process.execPath,
      [...cliArgs(), 'check', '--spec', file, '--model', DIR, '--check-decode'],
      {
        encoding: 'utf8',
        timeout: 120_000,
        env: cliEnv(),
      },
    );
    expect(r.status, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^decode \(reference path\): .*agrees with the exact forward/m);
    expect(r.stdout).toMatch(/^decode \(fused path\): .*layer 1: /m);
  });
});
