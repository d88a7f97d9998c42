// The Hub client against the stand-in's hostile answers (e2e/hub-repos.ts HOSTILE): every lookup and every listed
// download is refused with one line of the right kind, in bounded bytes (the stand-in counts what it sent) and
// bounded time (timeouts shortened here: 1.5 s to answer, 1.5 s of stall), and a cancelled lookup stops its
// requests. A good repository without tokenizer.json resolves (it opens with token ids).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StandIn, startHubServer, TREE_LIES_LISTED } from '../../e2e/hub-server';
import { HubError, resolveHubModel } from './hub-api';
import { fetchListed, type NetLimits } from './hub-fetch';

let hub: StandIn;
beforeAll(async () => {
  hub = await startHubServer();
});
afterAll(async () => {
  await hub?.close();
});

const LIMITS: Partial<NetLimits> = { connectMs: 1500, idleMs: 1500 };
/** What any refusal may cost the stand-in: the caps (4 MiB at most) plus what the sockets buffer on loopback. */
const BYTES_BOUND = 12 << 20;

async function refused(
  p: Promise<unknown>,
  kind: HubError['kind'],
  line: RegExp,
): Promise<{ message: string; ms: number }> {
  const t0 = Date.now();
  const sent0 = hub.bytesSent();
  try {
    await p;
  } catch (e) {
    expect(e, String(e)).toBeInstanceOf(HubError);
    const err = e as HubError;
    expect(err.message).not.toMatch(/\n/);
    expect(err.message).toMatch(line);
    expect(err.kind, err.message).toBe(kind);
    expect(hub.bytesSent() - sent0).toBeLessThan(BYTES_BOUND);
    return { message: err.message, ms: Date.now() - t0 };
  }
  throw new Error('expected a refusal');
}

const look = (name: string, o: { signal?: AbortSignal } = {}) =>
  resolveHubModel(`hostile/${name}`, 'main', { hubUrl: hub.origin, limits: LIMITS, ...o });

/** Downloads a listed weights file of a hostile repository whole, as the CLI and the page do after consent. */
async function download(name: string) {
  const s = await look(name);
  const w = s.weights[0];
  let n = 0;
  for await (const c of fetchListed(
    `${s.url}${w.path}`,
    w.path,
    w.size,
    { repo: s.repo, revision: s.commit },
    {
      limits: LIMITS,
    },
  ))
    n += c.length;
  return n;
}

describe('the Hub client against hostile answers', () => {
  it('caps what it reads whole before consent: an endless config.json or index is cut at the cap', async () => {
    await refused(look('endless-config'), 'network', /^config\.json: the server sent more than 1\.0 MiB/);
    await refused(
      look('endless-index'),
      'network',
      /^model\.safetensors\.index\.json: the server sent more than 4\.0 MiB/,
    );
  });

  it('pagination: an endless Link chain stops at the page cap; a next page on another origin is not followed', async () => {
    const mark = hub.requests.length;
    await refused(look('endless-pages'), 'network', /file listing goes on past 50 pages: stopped there/);
    expect(hub.requests.slice(mark).filter((r) => r.path.includes('/tree/')).length).toBe(50);
    const mark2 = hub.requests.length;
    await refused(
      look('foreign-next'),
      'network',
      /sends its next page to another host \(http:\/\/127\.0\.0\.1:\d+\): not followed/,
    );
    expect(hub.requests.slice(mark2).filter((r) => r.host === hub.cdnOrigin.slice(7))).toEqual([]);
  });

  it('an API that never answers times out; a cancelled lookup stops at once', async () => {
    const { ms } = await refused(look('silent-api'), 'network', /did not answer in 1\.5 s$/);
    expect(ms).toBeLessThan(20_000);
    const ctl = new AbortController();
    const p = look('silent-api', { signal: ctl.signal });
    setTimeout(() => ctl.abort(), 100);
    await expect(p).rejects.toMatchObject({ name: 'AbortError' });
    // An endless listing cancelled after its first pages: no request after the abort.
    // (The stand-in's slow mode answers each page 50 ms late.)
    hub.setSlow({ chunk: 1 << 16, ms: 50 });
    try {
      const ctl2 = new AbortController();
      const mark = hub.requests.length;
      const p2 = look('endless-pages', { signal: ctl2.signal });
      await expect.poll(() => hub.requests.length - mark).toBeGreaterThan(3);
      ctl2.abort();
      await expect(p2).rejects.toMatchObject({ name: 'AbortError' });
      const after = hub.requests.length;
      await new Promise((r) => setTimeout(r, 300));
      expect(hub.requests.length).toBe(after);
      expect(after - mark).toBeLessThan(50);
    } finally {
      hub.setSlow(null);
    }
  });

  it('says what the Hub says: gated (401, 403), 429, EntryNotFound, RepoNotFound, RevisionNotFound', async () => {
    await refused(
      look('gated-401'),
      'model',
      /^hostile\/gated-401 is a gated repository \(HTTP 401\): the Hub says "Access to model hostile\/gated-401 is restricted\. You must have access/,
    );
    await refused(
      look('gated-403'),
      'model',
      /is a gated repository \(HTTP 403\): the Hub says ".*ask for access\."; the explorer sends no token$/,
    );
    await refused(
      look('rate-limited'),
      'network',
      /^the Hub is limiting requests \(HTTP 429, retry after 30 s\): try again later$/,
    );
    await refused(
      look('entry-missing'),
      'model',
      /^hostile\/entry-missing@[0-9a-f]{40}: config\.json is not there \(HTTP 404 EntryNotFound\)$/,
    );
    await refused(
      resolveHubModel('nobody/nothing', 'main', { hubUrl: hub.origin, limits: LIMITS }),
      'model',
      /^nobody\/nothing: no such repository on the Hub, or it is private$/,
    );
    await refused(
      resolveHubModel('EleutherAI/pythia-70m', 'step7', { hubUrl: hub.origin, limits: LIMITS }),
      'model',
      /^EleutherAI\/pythia-70m has no revision "step7" \(no such branch, tag or commit\)$/,
    );
  });

  it('refuses garbage JSON and a malformed oid as the Hub answering wrongly', async () => {
    await refused(
      look('garbage-json'),
      'network',
      /^the Hub's API answered hostile\/garbage-json with something that is not JSON \(it starts "<!DOCTYPE html>/,
    );
    await refused(look('garbage-tree'), 'network', /with something that is not JSON/);
    await refused(
      look('bad-oid'),
      'network',
      /lists model\.safetensors with LFS oid "ZZZ-not-a-sha256", not a sha256 \(64 hex digits\): refused$/,
    );
  });

  it('validates a repository id and a revision before any request', async () => {
    const mark = hub.requests.length;
    for (const bad of ['../etc', 'a/b/c', 'a/b?x=1', 'a/b#c', 'a/-b', 'a/b.', 'x', 'a /b'])
      await refused(
        resolveHubModel(bad, 'main', { hubUrl: hub.origin }),
        'input',
        /is not a Hub repository id/,
      );
    for (const bad of ['', 'a b', '../main', 'x?y', 'x#y', 'a%2f'])
      await refused(resolveHubModel('a/b', bad, { hubUrl: hub.origin }), 'input', /is not a revision/);
    expect(hub.requests.length).toBe(mark);
  });

  it('after consent: a body longer or shorter than listed, a stalled body, and a listing that lies are refused', async () => {
    await refused(
      download('longer-body'),
      'network',
      /^model\.safetensors: the server sent more than the [\d.]+ KiB listed/,
    );
    await refused(
      download('shorter-body'),
      'network',
      /^model\.safetensors: cut short: the server sent [\d.]+ KiB of the [\d.]+ KiB listed; nothing was kept$/,
    );
    const { ms } = await refused(
      download('stalled-body'),
      'network',
      /^model\.safetensors: the download stalled \(no byte for 1\.5 s after [\d.]+ KiB\): stopped, nothing was kept$/,
    );
    expect(ms).toBeLessThan(20_000);
    // The CDN announces its 1 MiB: refused before a byte of it is read.
    await refused(
      download('tree-lies'),
      'network',
      /^model\.safetensors: the server announces [\d.]+ (KiB|MiB), not the 2\.0 KiB listed: refused before the download$/,
    );
    // The page asks with the same lookup, so its button says the listed size: 2 KiB and the config.
    const s = await look('tree-lies');
    expect(s.weights[0].size).toBe(TREE_LIES_LISTED);
  });

  it('a good repository without tokenizer.json resolves (no tokenizer), and its weights download whole', async () => {
    const s = await look('no-tokenizer');
    expect(s.tokenizer).toBeNull();
    expect(await download('no-tokenizer')).toBe(s.weights[0].size);
  });
});
