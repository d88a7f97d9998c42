// The Hub client against the stand-in Hub (e2e/hub-server.ts, on loopback): a branch, a tag, a training-step
// branch and a commit resolve to a commit with the files' sizes and sha256 (LFS oids); sharded and unsharded
// repositories; and one line for each way it can fail — a bin-only revision, a repository that is not
// GPT-NeoX, a missing or private repository, a missing revision, a host that does not answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN_ONLY_BRANCH,
  NOT_NEOX_REPO,
  PRIVATE_REPO,
  SHARDED_REPO,
  type StandIn,
  startHubServer,
} from '../../e2e/hub-server';
import { HubError, parseHubRef, resolveHubModel } from './hub-api';

let hub: StandIn;
beforeAll(async () => {
  hub = await startHubServer();
});
afterAll(async () => {
  await hub?.close();
});

async function failure(p: Promise<unknown>): Promise<HubError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(HubError);
    expect((e as Error).message).not.toContain('\n');
    return e as HubError;
  }
  throw new Error('expected a HubError');
}

describe('the Hub client', () => {
  it('parses org/name@revision', () => {
    expect(parseHubRef('EleutherAI/pythia-1b@step143000')).toEqual({
      repo: 'EleutherAI/pythia-1b',
      revision: 'step143000',
    });
    expect(parseHubRef(' EleutherAI/pythia-1b ')).toEqual({ repo: 'EleutherAI/pythia-1b', revision: 'main' });
    expect(parseHubRef('a/b@refs/pr/2').revision).toBe('refs/pr/2');
    for (const bad of ['pythia-1b', 'a/b/c', '../x/y', 'a/b@', 'a/b@x y', 'a/b@../main'])
      expect(() => parseHubRef(bad), bad).toThrow(HubError);
  });

  it('resolves a branch to its commit with every weights file, size and sha256', async () => {
    const repo = 'EleutherAI/pythia-160m';
    const s = await resolveHubModel(repo, 'main', { hubUrl: hub.origin });
    expect(s.commit).toBe(hub.commit(repo, 'main'));
    expect(s.url).toBe(`${hub.origin}/${repo}/resolve/${s.commit}/`);
    const w = hub.file(repo, 'model.safetensors');
    expect(s.weights).toEqual([{ path: 'model.safetensors', size: w.body.length, sha256: w.sha256 }]);
    expect(s.index).toBeNull();
    expect(s.cfg.hiddenSize).toBeGreaterThan(0);
    expect(s.totalBytes).toBe(
      w.body.length +
        hub.file(repo, 'config.json').body.length +
        hub.file(repo, 'tokenizer.json').body.length,
    );
    // A training-step branch, a tag and the commit itself.
    const step = await resolveHubModel(repo, 'step1000', { hubUrl: hub.origin });
    expect(step.commit).toBe(hub.commit(repo, 'step1000'));
    expect(step.commit).not.toBe(s.commit);
    expect((await resolveHubModel(repo, 'v0', { hubUrl: hub.origin })).commit).toBe(step.commit);
    expect((await resolveHubModel(repo, s.commit, { hubUrl: hub.origin })).weights).toEqual(s.weights);
  });

  it('lists the shards of a sharded repository from its index, each with its sha256', async () => {
    const s = await resolveHubModel(SHARDED_REPO, 'main', { hubUrl: hub.origin });
    expect(s.index).not.toBeNull();
    const shards = hub.paths(SHARDED_REPO).filter((p) => /^model-\d+-of-\d+\.safetensors$/.test(p));
    expect(shards.length).toBeGreaterThan(1);
    expect(s.weights.map((w) => w.path)).toEqual(shards.sort());
    for (const w of s.weights) expect(w.sha256).toBe(hub.file(SHARDED_REPO, w.path).sha256);
  });

  it('follows a branch that moved: the same name now gives the new commit', async () => {
    const repo = 'EleutherAI/pythia-70m-deduped';
    const before = await resolveHubModel(repo, 'main', { hubUrl: hub.origin });
    hub.moveBranch(repo, 'main', hub.commit(repo, 'step1000'));
    try {
      const after = await resolveHubModel(repo, 'main', { hubUrl: hub.origin });
      expect(after.commit).toBe(hub.commit(repo, 'step1000'));
      expect(after.weights[0].sha256).not.toBe(before.weights[0].sha256);
    } finally {
      hub.moveBranch(repo, 'main', before.commit);
    }
  });

  it('says in one line what is wrong: bin only, not GPT-NeoX, missing or private, no such revision, no host', async () => {
    const o = { hubUrl: hub.origin };
    const bin = await failure(resolveHubModel('EleutherAI/pythia-410m', BIN_ONLY_BRANCH, o));
    expect(bin.kind).toBe('model');
    expect(bin.message).toMatch(/has only pytorch_model\.bin .*reads safetensors/);
    const gpt2 = await failure(resolveHubModel(NOT_NEOX_REPO, 'main', o));
    expect(gpt2.message).toMatch(/model_type 'gpt2' is not supported/);
    for (const r of ['nobody/nothing', PRIVATE_REPO]) {
      const e = await failure(resolveHubModel(r, 'main', o));
      expect(e.message).toBe(`${r}: no such repository on the Hub, or it is private`);
    }
    const rev = await failure(resolveHubModel('EleutherAI/pythia-1b', 'step999999', o));
    expect(rev.message).toBe(
      'EleutherAI/pythia-1b has no revision "step999999" (no such branch, tag or commit)',
    );
    const down = await failure(
      resolveHubModel('EleutherAI/pythia-1b', 'main', { hubUrl: 'http://127.0.0.1:9' }),
    );
    expect(down.kind).toBe('network');
    expect(down.message).toMatch(/could not reach http:\/\/127\.0\.0\.1:9 /);
  });
});
