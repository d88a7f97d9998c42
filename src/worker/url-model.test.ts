// The streaming pieces of a URL model load: the incremental sha256 equals Node's over any chunking and is
// checked before the consumer can use what it read; a mismatch streamed into the engine leaves the model
// loaded before in place; the budget refusal from config.json alone; the Blob kept for the cache is the file.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { parseConfigText } from '../model/config';
import { randomConfigJson, randomModelFiles } from '../model/random-model';
import { mulberry32 } from '../numeric/random';
import { BlobCollector, budgetRefusal, hashChunks, minWeightBytes, mismatchError } from './url-model';

const seed = Number(process.env.HUB_SEED ?? Date.now() % 1e9);

/** `bytes` cut at random places (empty chunks included) into a ReadableStream. */
function chunked(bytes: Uint8Array, rng: () => number): ReadableStream<Uint8Array> {
  const cuts: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; ) {
    const n = Math.floor(rng() * 70_000) * (rng() < 0.1 ? 0 : 1);
    cuts.push(bytes.slice(at, at + n));
    at += n;
  }
  return new ReadableStream({
    pull(c) {
      const next = cuts.shift();
      if (next === undefined) c.close();
      else c.enqueue(next);
    },
  });
}

const nodeSha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

describe(`streamed sha256 (seed ${seed}, HUB_SEED=${seed} replays)`, () => {
  it('matches node:crypto over random chunkings, passes every byte through, and keeps them as a Blob', async () => {
    const rng = mulberry32(seed);
    for (const size of [0, 1, 63, 64, 65, 100_003, 1 << 20]) {
      const bytes = new Uint8Array(size).map(() => Math.floor(rng() * 256));
      const kept = new BlobCollector(1 << 16);
      let got: { hex: string; bytes: number } | null = null;
      const out: number[] = [];
      for await (const c of hashChunks(
        chunked(bytes, rng),
        (hex, n) => {
          got = { hex, bytes: n };
        },
        (c) => kept.add(c),
      ))
        out.push(c.length);
      expect(got, `size ${size}`).toEqual({ hex: nodeSha(bytes), bytes: size });
      expect(out.reduce((a, b) => a + b, 0)).toBe(size);
      const blob = kept.finish();
      expect(blob.size).toBe(size);
      expect(nodeSha(new Uint8Array(await blob.arrayBuffer()))).toBe(nodeSha(bytes));
    }
  });

  it('raises the end check where the consumer would see the end, and cancels the source when stopped early', async () => {
    const bytes = new Uint8Array(5000).fill(7);
    const it = hashChunks(chunked(bytes, mulberry32(seed)), (hex) => {
      throw mismatchError(hex, '0'.repeat(64));
    });
    const read = async () => {
      for await (const _ of it) {
        // read to the end
      }
    };
    await expect(read()).rejects.toMatchObject({ kind: 'model-mismatch' });
    let cancelled = false;
    const src = new ReadableStream<Uint8Array>({
      pull: (c) => c.enqueue(new Uint8Array(10)),
      cancel: () => {
        cancelled = true;
      },
    });
    const early = hashChunks(src, () => undefined);
    await early.next();
    await early.return();
    expect(cancelled).toBe(true);
  });
});

describe('memory budget from config.json', () => {
  it('refuses in one line only what cannot fit even in fp16', () => {
    const cfg = parseConfigText(
      JSON.stringify(
        randomConfigJson({
          vocab: 50304,
          d: 1024,
          layers: 24,
          heads: 16,
          ff: 4096,
          rotaryPct: 0.25,
          parallel: true,
        }),
      ),
    );
    // Pythia-410m's shapes: about 0.75 GiB in fp16.
    expect(minWeightBytes(cfg) / 2 ** 30).toBeGreaterThan(0.7);
    expect(minWeightBytes(cfg) / 2 ** 30).toBeLessThan(0.8);
    expect(budgetRefusal(cfg, 4 * 2 ** 30)).toBeNull();
    const line = budgetRefusal(cfg, 2 ** 29);
    expect(line).toMatch(
      /^the model needs at least 0\.7\d GiB .* more than the 0\.50 GiB budget .* nothing was downloaded$/,
    );
    expect(line).not.toContain('\n');
  });
});

describe('a mismatched stream into the engine', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.create(nodeGpu(), nodeShaderSource());
  });
  afterAll(() => engine?.dispose());

  it('is refused at its end, before install: the model loaded before stays', async () => {
    const spec = { vocab: 97, d: 36, layers: 2, heads: 3, ff: 70, rotaryPct: 0.5, parallel: true };
    const a = randomModelFiles(spec, seed);
    const b = randomModelFiles({ ...spec, layers: 3 }, seed + 1);
    const before = await engine.loadModel({ ...a, name: 'a' });
    const want = await engine.forward([1, 2, 3]);
    let ended = false;
    const load = engine.loadModelStream({
      config: b.config,
      name: 'b',
      totalBytes: b.weights.length,
      weights: hashChunks(chunked(b.weights, mulberry32(seed)), (hex) => {
        ended = true;
        expect(hex).toBe(nodeSha(b.weights));
        throw mismatchError(hex, '1'.repeat(64));
      }),
    });
    await expect(load).rejects.toMatchObject({ kind: 'model-mismatch' });
    expect(ended).toBe(true);
    expect(engine.modelInfo?.name).toBe('a');
    expect(engine.modelInfo?.config.numLayers).toBe(before.config.numLayers);
    const got = await engine.forward([1, 2, 3]);
    expect(Array.from(got.dump.logits)).toEqual(Array.from(want.dump.logits));
  });
});
