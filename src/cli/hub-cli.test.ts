// The CLI and the Hub: `--hub org/name@revision` against the stand-in Hub (e2e/hub-server.ts, loopback, named by
// $HF_ENDPOINT) fills a Hugging Face cache folder ($HF_HUB_CACHE) in its layout and runs from it; the cache
// folder itself opens with --model; a sharded model folder gives bit-identical dumps to its one-file copy; a
// bin-only revision, a missing repository and a download cut off mid-file are one line each (the cut one exit 4:
// the network), and the cut one leaves nothing half-written in the cache; a spec file does not choose the host.
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN_ONLY_BRANCH, SHARDED_REPO, type StandIn, startHubServer } from '../../e2e/hub-server';
import { randomConfigJson, randomTensors } from '../model/random-model';
import { writeSafetensors } from '../model/safetensors-write';
import { INDEX_FILE } from '../model/shard-index';
import { writeSharded } from '../model/shard-write';
import { defaultRunSpec } from '../run/runspec';
import { cliArgs, cliEnv } from './testing';

let hub: StandIn;
beforeAll(async () => {
  hub = await startHubServer();
});
afterAll(async () => {
  await hub?.close();
});

/** Runs the CLI asynchronously (the stand-in answers from this process meanwhile). */
async function cli(args: string[], env: Record<string, string>) {
  const { spawn } = await import('node:child_process');
  return new Promise<{ code: number | null; stderr: string[] }>((done) => {
    const p = spawn(process.execPath, [...cliArgs(), ...args], {
      env: cliEnv(env),
    });
    let err = '';
    p.stderr.on('data', (d) => {
      err += d;
    });
    p.on('close', (code) =>
      done({ code, stderr: err.split('\n').filter((l) => l && !l.startsWith('npm warn')) }),
    );
  });
}

const TOKENS = '3,14,15,92,65';
const tmp = (p: string) => mkdtempSync(join(tmpdir(), p));

describe('cli --hub and the Hugging Face cache', () => {
  it('downloads a training-step branch into the cache, runs it, and opens the cache folder with --model', async () => {
    const cache = tmp('hf-cache-');
    const env = { HF_ENDPOINT: hub.origin, HF_HUB_CACHE: cache };
    const repo = 'EleutherAI/pythia-160m';
    const out = join(cache, 'a.json');
    const r = await cli(['forward', '--hub', `${repo}@step1000`, '--tokens', TOKENS, '--out', out], env);
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const commit = hub.commit(repo, 'step1000');
    const folder = join(cache, 'models--EleutherAI--pythia-160m');
    expect(readFileSync(join(folder, 'refs', 'step1000'), 'utf8')).toBe(commit);
    const link = join(folder, 'snapshots', commit, 'model.safetensors');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    const sha = hub.file(repo, 'model.safetensors', 'step1000').sha256;
    expect(readlinkSync(link)).toBe(join('..', '..', 'blobs', sha));
    expect(readdirSync(join(folder, 'blobs')).filter((b) => b.endsWith('.incomplete'))).toEqual([]);
    // The same model from a folder holding the stand-in's bytes: the same dump.
    const plain = tmp('plain-');
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json'])
      writeFileSync(join(plain, f), hub.file(repo, f, 'step1000').body);
    const out2 = join(plain, 'b.json');
    expect((await cli(['forward', '--model', plain, '--tokens', TOKENS, '--out', out2], {})).code).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(out2, 'utf8'));
    // The cache folder itself (its only snapshot), and the commit again with no Hub at all.
    const out3 = join(cache, 'c.json');
    expect((await cli(['forward', '--model', folder, '--tokens', TOKENS, '--out', out3], {})).code).toBe(0);
    expect(readFileSync(out3, 'utf8')).toBe(readFileSync(out, 'utf8'));
    const offline = { HF_ENDPOINT: 'http://127.0.0.1:9', HF_HUB_CACHE: cache };
    const r4 = await cli(
      ['forward', '--hub', `${repo}@${commit}`, '--tokens', TOKENS, '--out', join(cache, 'd.json')],
      offline,
    );
    expect(r4.code, r4.stderr.join('\n')).toBe(0);
  });

  it("checks a link's spec whose model is a Hub URL: fetched into the cache at the link's commit", async () => {
    const cache = tmp('hf-cache-');
    const repo = 'EleutherAI/pythia-70m';
    const commit = hub.commit(repo, 'step1000');
    const spec = {
      ...defaultRunSpec(),
      model: {
        kind: 'url',
        url: `${hub.origin}/${repo}/resolve/${commit}/`,
        sha256: hub.file(repo, 'model.safetensors', 'step1000').sha256,
      },
      prompt: { text: 'And God' },
      generate: 0,
    };
    const file = join(cache, 'spec.json');
    writeFileSync(file, JSON.stringify(spec));
    // A spec file does not choose the host: the stand-in is not this CLI's Hub until HF_ENDPOINT says so.
    const elsewhere = await cli(['check', '--spec', file], { HF_HUB_CACHE: cache });
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toEqual([
      `error: the spec's model is on '${hub.origin}', not on the Hub this CLI uses (https://huggingface.co): to fetch it from there, set HF_ENDPOINT=${hub.origin}; or download it and pass --model DIR`,
    ]);
    expect(existsSync(join(cache, 'models--EleutherAI--pythia-70m'))).toBe(false);
    const r = await cli(['check', '--spec', file], { HF_HUB_CACHE: cache, HF_ENDPOINT: hub.origin });
    expect(r.code, r.stderr.join('\n')).toBe(0);
    expect(
      existsSync(join(cache, 'models--EleutherAI--pythia-70m', 'snapshots', commit, 'model.safetensors')),
    ).toBe(true);
    // The same link naming other weights: refused in one line.
    writeFileSync(file, JSON.stringify({ ...spec, model: { ...spec.model, sha256: 'f'.repeat(64) } }));
    const bad = await cli(['check', '--spec', file], { HF_HUB_CACHE: cache, HF_ENDPOINT: hub.origin });
    expect(bad.code).toBe(2);
    expect(bad.stderr.at(-1)).toMatch(/the weights have sha256 [0-9a-f]{64}, the spec expects f{64}/);
  });

  it('runs a sharded repository', async () => {
    const cache = tmp('hf-cache-');
    const out = join(cache, 'a.json');
    const r = await cli(['forward', '--hub', SHARDED_REPO, '--tokens', TOKENS, '--out', out], {
      HF_ENDPOINT: hub.origin,
      HF_HUB_CACHE: cache,
    });
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const snap = join(
      cache,
      'models--EleutherAI--pythia-6.9b',
      'snapshots',
      hub.commit(SHARDED_REPO, 'main'),
    );
    expect(existsSync(join(snap, INDEX_FILE))).toBe(true);
    expect(readdirSync(snap).filter((f) => /^model-\d+-of-\d+\.safetensors$/.test(f)).length).toBeGreaterThan(
      1,
    );
  });

  it('says in one line what is wrong: bin only, no such repository, a download cut off (nothing kept)', async () => {
    const cache = tmp('hf-cache-');
    const env = { HF_ENDPOINT: hub.origin, HF_HUB_CACHE: cache };
    const args = (ref: string) => [
      'forward',
      '--hub',
      ref,
      '--tokens',
      TOKENS,
      '--out',
      join(cache, 'x.json'),
    ];
    const bin = await cli(args(`EleutherAI/pythia-410m@${BIN_ONLY_BRANCH}`), env);
    expect(bin.code).toBe(2);
    expect(bin.stderr).toHaveLength(1);
    expect(bin.stderr[0]).toMatch(/has only pytorch_model\.bin/);
    const none = await cli(args('nobody/nothing'), env);
    expect(none.code).toBe(2);
    expect(none.stderr).toEqual(['error: nobody/nothing: no such repository on the Hub, or it is private']);
    const repo = 'EleutherAI/pythia-1b';
    const w = hub.file(repo, 'model.safetensors');
    hub.setCut({ file: 'model.safetensors', afterBytes: w.body.length >> 1 });
    try {
      const cut = await cli(args(repo), env);
      expect(cut.code).toBe(4); // the network, not the GPU
      expect(cut.stderr.at(-1)).toMatch(
        /^error: model\.safetensors: the download broke off after \d+ bytes .*nothing was kept$/,
      );
    } finally {
      hub.setCut(null);
    }
    const blobs = join(cache, 'models--EleutherAI--pythia-1b', 'blobs');
    expect(readdirSync(blobs).filter((b) => b === w.sha256 || b.endsWith('.incomplete'))).toEqual([]);
    // No snapshot and no ref: the next run asks the Hub, it does not open half a model.
    expect(
      existsSync(join(cache, 'models--EleutherAI--pythia-1b', 'snapshots', hub.commit(repo, 'main'))),
    ).toBe(false);
    expect(existsSync(join(cache, 'models--EleutherAI--pythia-1b', 'refs', 'main'))).toBe(false);
  });

  it('reads a sharded model folder: the same dump as its one-file copy; a shard missing is one line', async () => {
    const spec = {
      vocab: 128,
      d: 32,
      layers: 2,
      heads: 2,
      ff: 64,
      rotaryPct: 0.5,
      parallel: true,
      dtype: 'BF16' as const,
    };
    const tensors = randomTensors(spec, 3);
    const one = tmp('one-');
    const sharded = tmp('sharded-');
    for (const d of [one, sharded])
      writeFileSync(join(d, 'config.json'), JSON.stringify(randomConfigJson(spec)));
    writeFileSync(join(one, 'model.safetensors'), writeSafetensors(tensors));
    const files = writeSharded(tensors, 8 << 10);
    writeFileSync(join(sharded, INDEX_FILE), files.index);
    for (const [n, b] of files.shards) writeFileSync(join(sharded, n), b);
    const run = (d: string) =>
      cli(['forward', '--model', d, '--tokens', TOKENS, '--out', join(d, 'out.json')], {});
    expect((await run(one)).code).toBe(0);
    expect((await run(sharded)).code).toBe(0);
    expect(readFileSync(join(sharded, 'out.json'), 'utf8')).toBe(readFileSync(join(one, 'out.json'), 'utf8'));
    const [first] = files.shards.keys();
    const { rmSync } = await import('node:fs');
    rmSync(join(sharded, first));
    const r = await run(sharded);
    expect(r.code).toBe(2);
    expect(r.stderr).toHaveLength(1);
    expect(r.stderr[0]).toContain(`shard '${first}' is missing`);
  });
});
