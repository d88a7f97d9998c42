// The CLI's `--hub` against the stand-in's hostile answers (e2e/hub-repos.ts HOSTILE), with the timeouts
// shortened through huggingface_hub's own variables (HF_HUB_ETAG_TIMEOUT, HF_HUB_DOWNLOAD_TIMEOUT: 1.5 s): each
// refused with exactly one line and its exit code (2: the repository as the Hub describes it; 4: the network or
// a Hub that answers wrongly), in bounded time, and nothing left in the cache that a later run could take for a
// model (no snapshot, no ref, no .incomplete). A failed download does not stop the next run from asking the Hub;
// a branch downloaded before opens offline; a tokenizer-less model runs from token ids.
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Hostile, type StandIn, startHubServer } from '../../e2e/hub-server';
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
  const t0 = Date.now();
  return new Promise<{ code: number | null; stderr: string[]; ms: number }>((done) => {
    const p = spawn(process.execPath, [...cliArgs(), ...args], { env: cliEnv(env) });
    let err = '';
    p.stderr.on('data', (d) => {
      err += d;
    });
    const kill = setTimeout(() => p.kill('SIGKILL'), 40_000);
    p.on('close', (code) => {
      clearTimeout(kill);
      done({
        code,
        stderr: err.split('\n').filter((l) => l && !l.startsWith('npm warn')),
        ms: Date.now() - t0,
      });
    });
  });
}

const tmp = (p: string) => mkdtempSync(join(tmpdir(), p));
const FAST = { HF_HUB_ETAG_TIMEOUT: '1.5', HF_HUB_DOWNLOAD_TIMEOUT: '1.5' };

/** What a repository's cache folder holds besides checked blobs: snapshots, refs, unfinished files. */
function leftovers(cache: string, repo: string): string[] {
  const dir = join(cache, `models--${repo.replace('/', '--')}`);
  const out: string[] = [];
  for (const sub of ['snapshots', 'refs']) {
    const p = join(dir, sub);
    if (existsSync(p)) out.push(...readdirSync(p).map((f) => `${sub}/${f}`));
  }
  const blobs = join(dir, 'blobs');
  if (existsSync(blobs)) out.push(...readdirSync(blobs).filter((b) => b.endsWith('.incomplete')));
  return out;
}

/** `forward --hub hostile/<name>`: exit `code`, one line matching `line`, nothing usable left in the cache. */
async function refused(name: Hostile, code: number, line: RegExp, cache = tmp('hf-hostile-')) {
  const repo = `hostile/${name}`;
  const r = await cli(['forward', '--hub', repo, '--tokens', '1,2,3', '--out', join(cache, 'o.json')], {
    HF_ENDPOINT: hub.origin,
    HF_HUB_CACHE: cache,
    ...FAST,
  });
  expect(r.stderr, r.stderr.join('\n')).toHaveLength(1);
  expect(r.stderr[0]).toMatch(/^error: /);
  expect(r.stderr[0]).toMatch(line);
  expect(r.code, r.stderr[0]).toBe(code);
  expect(r.ms).toBeLessThan(30_000);
  expect(leftovers(cache, repo)).toEqual([]);
  expect(existsSync(join(cache, 'o.json'))).toBe(false);
  return r;
}

describe('cli --hub against hostile answers', () => {
  it('before the download: endless files, endless or foreign pages', async () => {
    await refused(
      'endless-config',
      4,
      /config\.json: the server sent more than 1\.0 MiB, the most read of it: cut there/,
    );
    await refused('endless-index', 4, /model\.safetensors\.index\.json: the server sent more than 4\.0 MiB/);
    await refused('endless-pages', 4, /file listing goes on past 50 pages: stopped there$/);
    await refused(
      'foreign-next',
      4,
      /sends its next page to another host \(http:\/\/127\.0\.0\.1:\d+\): not followed$/,
    );
  });

  it('before the download: a silent API, garbage, a malformed oid', async () => {
    await refused('silent-api', 4, /the Hub's API: http:\/\/127\.0\.0\.1:\d+ did not answer in 1\.5 s$/);
    await refused(
      'garbage-json',
      4,
      /the Hub's API answered hostile\/garbage-json with something that is not JSON/,
    );
    await refused('garbage-tree', 4, /with something that is not JSON/);
    await refused('bad-oid', 4, /with LFS oid "ZZZ-not-a-sha256", not a sha256 \(64 hex digits\): refused$/);
  });

  it("the Hub's own answers: gated (401, 403), 429, EntryNotFound, no such repository or revision", async () => {
    await refused(
      'gated-401',
      2,
      /hostile\/gated-401 is a gated repository \(HTTP 401\): the Hub says "Access to model hostile\/gated-401 is restricted\./,
    );
    await refused(
      'gated-403',
      2,
      /is a gated repository \(HTTP 403\): .*not in the authorized list.*; the explorer sends no token$/,
    );
    await refused(
      'rate-limited',
      4,
      /^error: the Hub is limiting requests \(HTTP 429, retry after 30 s\): try again later$/,
    );
    await refused('entry-missing', 2, /config\.json is not there \(HTTP 404 EntryNotFound\)$/);
    const cache = tmp('hf-hostile-');
    const env = { HF_ENDPOINT: hub.origin, HF_HUB_CACHE: cache, ...FAST };
    const none = await cli(
      ['forward', '--hub', 'nobody/nothing', '--tokens', '1', '--out', join(cache, 'o.json')],
      env,
    );
    expect([none.code, none.stderr]).toEqual([
      2,
      ['error: nobody/nothing: no such repository on the Hub, or it is private'],
    ]);
    const rev = await cli(
      ['forward', '--hub', 'EleutherAI/pythia-70m@step7', '--tokens', '1', '--out', join(cache, 'o.json')],
      env,
    );
    expect([rev.code, rev.stderr]).toEqual([
      2,
      ['error: EleutherAI/pythia-70m has no revision "step7" (no such branch, tag or commit)'],
    ]);
    const bad = await cli(
      ['forward', '--hub', 'a/b?x=1', '--tokens', '1', '--out', join(cache, 'o.json')],
      env,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toEqual([
      'error: "a/b?x=1" is not a Hub repository id (org/name: letters, digits, - _ .)',
    ]);
  });

  it('after consent: more or fewer bytes than listed, a stalled body, a listing that lies; the next run asks again', async () => {
    await refused(
      'longer-body',
      4,
      /model\.safetensors: the server sent more than the [\d.]+ KiB listed .*refused, nothing was kept$/,
    );
    await refused(
      'shorter-body',
      4,
      /model\.safetensors: cut short: the server sent [\d.]+ KiB of the [\d.]+ KiB listed; nothing was kept$/,
    );
    await refused(
      'tree-lies',
      4,
      /model\.safetensors: the server announces [\d.]+ (KiB|MiB), not the 2\.0 KiB listed: refused before the download$/,
    );
    await refused('endless-tokenizer', 4, /tokenizer\.json: the server sent more than the \d+ bytes listed/);
    // A stalled download, then the same commit again: the Hub is asked again (nothing cached stands in for it).
    const cache = tmp('hf-hostile-');
    await refused(
      'stalled-body',
      4,
      /model\.safetensors: the download stalled \(no byte for 1\.5 s after [\d.]+ KiB\): stopped, nothing was kept$/,
      cache,
    );
    const commit = hub.commit('hostile/stalled-body', 'main');
    const mark = hub.requests.length;
    const again = await cli(
      ['forward', '--hub', `hostile/stalled-body@${commit}`, '--tokens', '1', '--out', join(cache, 'o.json')],
      { HF_ENDPOINT: hub.origin, HF_HUB_CACHE: cache, ...FAST },
    );
    expect(again.stderr).toHaveLength(1);
    expect(again.stderr[0]).toMatch(/the download stalled/);
    expect(
      hub.requests.slice(mark).some((r) => r.path.includes('/api/models/hostile/stalled-body/revision/')),
    ).toBe(true);
  });

  it('a tokenizer-less model runs from token ids; a branch in the cache opens offline, and with HF_HUB_OFFLINE', async () => {
    const cache = tmp('hf-hostile-');
    const env = { HF_ENDPOINT: hub.origin, HF_HUB_CACHE: cache, ...FAST };
    const args = (ref: string, out: string) => [
      'forward',
      '--hub',
      ref,
      '--tokens',
      '1,2,3',
      '--out',
      join(cache, out),
    ];
    const ok = await cli(args('hostile/no-tokenizer', 'a.json'), env);
    expect(ok.code, ok.stderr.join('\n')).toBe(0);
    const text = await cli(
      ['forward', '--hub', 'hostile/no-tokenizer', '--prompt', 'hi', '--out', join(cache, 'x.json')],
      env,
    );
    expect(text.code).toBe(2);
    expect(text.stderr.at(-1)).toMatch(/has no tokenizer: use --tokens/);
    // The Hub gone: main as cached, said in one line before the run.
    const dead = { ...env, HF_ENDPOINT: 'http://127.0.0.1:9' };
    const off = await cli(args('hostile/no-tokenizer@main', 'b.json'), dead);
    expect(off.code, off.stderr.join('\n')).toBe(0);
    expect(off.stderr.join('\n')).toMatch(
      /the Hub did not answer \(.*\): using main as cached, commit [0-9a-f]{7}/,
    );
    const offline = await cli(args('hostile/no-tokenizer', 'c.json'), { ...dead, HF_HUB_OFFLINE: '1' });
    expect(offline.code, offline.stderr.join('\n')).toBe(0);
    const missing = await cli(args('EleutherAI/pythia-70m', 'd.json'), { ...dead, HF_HUB_OFFLINE: '1' });
    expect(missing.code).toBe(2);
    expect(missing.stderr.at(-1)).toMatch(
      /EleutherAI\/pythia-70m@main is not in the Hugging Face cache .*, and HF_HUB_OFFLINE is set$/,
    );
  });
});
