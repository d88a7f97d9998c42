// The worker's URL and Hub loads (run here in Node on Dawn) against the stand-in's hostile answers: before the
// viewer consents only HEADs and capped reads (an endless config.json or index is cut at its cap, an endless
// tokenizer.json is never read); after consent no file is read past the size agreed to (the Hub's listing) or
// short of it, nor waits on a stalled body past the idle timeout (1.5 s here); each is one line of kind 'model',
// in bounded bytes, and the model loaded before stays. A Hub model without tokenizer.json loads and runs on ids.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Hostile, type StandIn, startHubServer } from '../../e2e/hub-server';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { resolveHubModel } from '../run/hub-api';
import type { NetLimits } from '../run/hub-fetch';
import type { LoadOptions, WorkerError } from './api';
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

const net: Partial<NetLimits> = { connectMs: 1500, idleMs: 1500 };
const folder = (h: Hostile) => `${hub.origin}/hostile/${h}/resolve/${hub.commit(`hostile/${h}`, 'main')}/`;

/** The options the page passes for a Hub model it looked up: its sha256 and every listed size. */
async function hubOptions(h: Hostile): Promise<LoadOptions> {
  const s = await resolveHubModel(`hostile/${h}`, 'main', { hubUrl: hub.origin, limits: net });
  return {
    expectSha256: s.weights[0].sha256,
    expectBytes: Object.fromEntries([
      ['config.json', s.configFile.size],
      ...(s.tokenizer ? [['tokenizer.json', s.tokenizer.size]] : []),
      ...s.weights.map((w) => [w.path, w.size]),
    ]),
    net,
  };
}

const load = (url: string, options: LoadOptions, signal = new AbortController().signal) =>
  downloadModel(
    engine,
    url,
    () => undefined,
    signal,
    options,
    () => undefined,
  );

async function refusal(p: Promise<unknown>, line: RegExp, maxBytes = 8 << 20): Promise<WorkerError> {
  const sent0 = hub.bytesSent();
  const t0 = Date.now();
  try {
    await p;
  } catch (e) {
    const w = e as WorkerError;
    expect(w.kind, String(w.message)).toBe('model');
    expect(w.message).not.toContain('\n');
    expect(w.message).toMatch(line);
    expect(hub.bytesSent() - sent0).toBeLessThan(maxBytes);
    expect(Date.now() - t0).toBeLessThan(20_000);
    return w;
  }
  throw new Error('expected a refusal');
}

describe('the worker against hostile answers', () => {
  it('before consent: HEADs and capped reads only', async () => {
    await refusal(
      probeModelUrl(folder('endless-config'), null, undefined, net),
      /^config\.json: the server sent more than 1\.0 MiB, the most read of it: cut there/,
    );
    await refusal(
      probeModelUrl(folder('endless-index'), null, undefined, net),
      /^model\.safetensors\.index\.json: the server sent more than 4\.0 MiB/,
    );
    const sent0 = hub.bytesSent();
    const mark = hub.requests.length;
    const p = await probeModelUrl(folder('endless-tokenizer'), null, undefined, net);
    expect(p.files.map((f) => f.file)).toEqual(['config.json', 'tokenizer.json', 'model.safetensors']);
    expect(hub.bytesSent() - sent0).toBeLessThan(64 << 10);
    const gets = hub.requests.slice(mark).filter((r) => r.method === 'GET');
    expect(gets.map((r) => r.path.split('/').at(-1))).toEqual(['config.json']);
    // No tokenizer.json: left out of the sizes, not an error.
    const none = await probeModelUrl(folder('no-tokenizer'), null, undefined, net);
    expect(none.files.map((f) => f.file)).toEqual(['config.json', 'model.safetensors']);
  });

  it('after consent: the listed size is enforced, a stalled body stops, and the model before stays', async () => {
    const before = engine.modelInfo?.name;
    await refusal(
      load(folder('tree-lies'), await hubOptions('tree-lies')),
      /^model\.safetensors: the server announces [\d.]+ (KiB|MiB), not the 2\.0 KiB listed: refused before the download$/,
    );
    await refusal(
      load(folder('longer-body'), await hubOptions('longer-body')),
      /^model\.safetensors: the server sent more than the [\d.]+ KiB listed/,
    );
    await refusal(
      load(folder('shorter-body'), await hubOptions('shorter-body')),
      /^model\.safetensors: cut short: the server sent [\d.]+ KiB of the [\d.]+ KiB listed/,
    );
    await refusal(
      load(folder('stalled-body'), await hubOptions('stalled-body')),
      /^model\.safetensors: the download stalled \(no byte for 1\.5 s after [\d.]+ KiB\)/,
    );
    await refusal(
      load(folder('endless-tokenizer'), await hubOptions('endless-tokenizer')),
      /^tokenizer\.json: the server sent more than the \d+ bytes listed/,
    );
    expect(engine.modelInfo?.name).toBe(before);
  });

  it('a cancelled download stops at once (a stalled body does not hold it)', async () => {
    const ctl = new AbortController();
    const p = load(
      folder('stalled-body'),
      { ...(await hubOptions('stalled-body')), net: { idleMs: 60_000 } },
      ctl.signal,
    );
    setTimeout(() => ctl.abort(), 300);
    const t0 = Date.now();
    await expect(p).rejects.toBeDefined();
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('a Hub model without tokenizer.json loads and runs on token ids', async () => {
    const m = await load(folder('no-tokenizer'), await hubOptions('no-tokenizer'));
    expect(m.name).toBe('no-tokenizer');
    expect(engine.modelInfo?.name).toBe('no-tokenizer');
    const out = await engine.forward([1, 2, 3]);
    expect(out.dump.logits.every(Number.isFinite)).toBe(true);
  });
});
