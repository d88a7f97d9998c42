// A URL model folder in the worker's loader (run here in Node on Dawn, against the stand-in Hub on loopback):
// sharded weights found by their index when model.safetensors is not there, read shard by shard with each
// shard checked against the sha256 named for it; a folder with only pytorch_model.bin, a wrong shard sha256 and
// a shard cut off mid-file are one line each, and the model loaded before stays.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN_ONLY_BRANCH, SHARDED_REPO, type StandIn, startHubServer } from '../../e2e/hub-server';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { manifestSha256 } from '../model/shard-index';
import type { LoadedModel, WorkerError } from './api';
import { downloadModel } from './url-load';
import { probeModelUrl } from './url-model';

let hub: StandIn;
let engine: Engine;
beforeAll(async () => {
  hub = await startHubServer();
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
});
afterAll(async () => {
  engine?.dispose();
  await hub?.close();
});

const folder = (repo: string, ref: string) => `${hub.origin}/${repo}/resolve/${hub.commit(repo, ref)}/`;
const shardsOf = (ref = 'main') =>
  hub
    .paths(SHARDED_REPO, ref)
    .filter((p) => /^model-\d+-of-\d+\.safetensors$/.test(p))
    .sort();

function load(url: string, options?: Parameters<typeof downloadModel>[4]) {
  let kept: LoadedModel | null = null;
  return downloadModel(
    engine,
    url,
    () => undefined,
    new AbortController().signal,
    options,
    (m) => {
      kept = m;
    },
  ).then((m) => ({ m, kept }));
}

async function refusal(p: Promise<unknown>): Promise<WorkerError> {
  try {
    await p;
  } catch (e) {
    const w = e as WorkerError;
    expect(typeof w.message).toBe('string');
    expect(w.message).not.toContain('\n');
    return w;
  }
  throw new Error('expected a refusal');
}

describe('URL folders with sharded weights', () => {
  it('probes the index and the shards, then loads them with every shard sha256', async () => {
    const url = folder(SHARDED_REPO, 'main');
    const probe = await probeModelUrl(url, null, async () => null);
    const shards = shardsOf();
    expect(probe.files.map((f) => f.file)).toEqual([
      'config.json',
      'tokenizer.json',
      'model.safetensors.index.json',
      ...shards,
    ]);
    const weights = shards.reduce((a, s) => a + hub.file(SHARDED_REPO, s).body.length, 0);
    expect(probe.files.slice(3).reduce((a, f) => a + (f.bytes ?? 0), 0)).toBe(weights);
    const shas = new Map(shards.map((s) => [s, hub.file(SHARDED_REPO, s).sha256]));
    const { m } = await load(url, {
      expectSha256: manifestSha256(shas),
      expectFiles: Object.fromEntries(shas),
    });
    expect(m.sha256).toBe(manifestSha256(shas));
    expect(m.files).toEqual(Object.fromEntries(shas));
    expect(m.weightsBytes).toBe(weights);
    expect(engine.modelInfo?.name).toBe('pythia-6.9b');
  });

  it('refuses a wrong shard sha256, a bin-only folder and a shard cut off, leaving the model before', async () => {
    const url = folder(SHARDED_REPO, 'main');
    const good = await load(url);
    const shards = shardsOf();
    const wrong = await refusal(load(url, { expectFiles: { [shards[1]]: '0'.repeat(64) } }));
    expect(wrong.kind).toBe('model-mismatch');
    expect(wrong.message).toMatch(new RegExp(`^${shards[1].replace(/\./g, '\\.')} hashes to sha256`));
    const bin = await refusal(load(folder('EleutherAI/pythia-410m', BIN_ONLY_BRANCH)));
    expect(bin.kind).toBe('model');
    expect(bin.message).toMatch(/has only pytorch_model\.bin/);
    hub.setCut({ file: shards[2], afterBytes: hub.file(SHARDED_REPO, shards[2]).body.length >> 1 });
    try {
      const cut = await refusal(load(url));
      expect(cut.kind).toBe('model');
      expect(cut.message).toMatch(
        new RegExp(`^${shards[2].replace(/\./g, '\\.')}: the download broke off after \\d+ bytes`),
      );
    } finally {
      hub.setCut(null);
    }
    expect(engine.modelInfo?.name).toBe(good.m.name);
    const out = await engine.forward([1, 2, 3]);
    expect(out.dump.logits.every(Number.isFinite)).toBe(true);
  });
});
