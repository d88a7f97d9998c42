// Sharded weights into the engine: an index and its shards give bit-identical hidden states to the same
// tensors in one file; a hostile index or shard is refused in one line before any tensor is uploaded, and the
// model loaded before stays loaded and runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomConfigJson, randomTensors } from '../model/random-model';
import { writeSafetensors } from '../model/safetensors-write';
import { bytesShard, type ShardFile, shardedSource } from '../model/shard-stream';
import { writeSharded } from '../model/shard-write';
import { Engine } from './engine';

const spec = {
  vocab: 97,
  d: 32,
  layers: 3,
  heads: 2,
  ff: 64,
  rotaryPct: 0.5,
  parallel: true,
  dtype: 'BF16' as const,
};
const config = JSON.stringify(randomConfigJson(spec));
const tensors = randomTensors(spec, 5);
const tokens = [3, 1, 4, 1, 5, 9, 2, 6];

let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
});
afterAll(() => engine?.dispose());

/** The shards, counting how many bytes of each were read through open(). */
function counted(files: ReturnType<typeof writeSharded>, read: Map<string, number>): ShardFile[] {
  return [...files.shards].map(([n, b]) => {
    const s = bytesShard(n, b, 1000);
    return {
      ...s,
      open: async function* () {
        for await (const c of s.open() as AsyncIterable<Uint8Array>) {
          read.set(n, (read.get(n) ?? 0) + c.length);
          yield c;
        }
      },
    };
  });
}

describe('sharded weights', () => {
  it('give bit-identical hidden states to one model.safetensors, read shard by shard', async () => {
    await engine.loadModel({ config, weights: writeSafetensors(tensors), name: 'one-file' });
    const want = await engine.forward(tokens);
    const files = writeSharded(tensors, 8 << 10);
    expect(files.shards.size).toBeGreaterThanOrEqual(3);
    const read = new Map<string, number>();
    const progress: number[] = [];
    const info = await engine.loadModelStream({
      config,
      name: 'sharded',
      weights: shardedSource(files.index, counted(files, read)),
      totalBytes: null,
      onProgress: (l) => progress.push(l),
    });
    expect(info.name).toBe('sharded');
    // Every shard read once, whole (the headers came from ranged reads), progress monotone to the total.
    expect([...read]).toEqual([...files.shards].map(([n, b]) => [n, b.length]));
    const total = [...files.shards.values()].reduce((a, b) => a + b.length, 0);
    expect(progress.at(-1)).toBe(total);
    expect(progress.every((p, i) => i === 0 || p >= progress[i - 1])).toBe(true);
    const got = await engine.forward(tokens);
    expect(got.dump.layers.length).toBe(spec.layers);
    for (let l = 0; l < spec.layers; l++) expect(got.dump.layers[l]).toEqual(want.dump.layers[l]);
    expect(got.dump.logits).toEqual(want.dump.logits);
  });

  it('refuses a hostile index before any shard is read whole; the model before stays and runs', async () => {
    await engine.loadModel({ config, weights: writeSafetensors(tensors), name: 'before' });
    const want = await engine.forward(tokens);
    const files = writeSharded(tensors, 8 << 10);
    const j = JSON.parse(files.index);
    const [first, second] = [...files.shards.keys()];
    const victim = Object.keys(j.weight_map).find((k) => j.weight_map[k] === second)!;
    j.weight_map[victim] = first;
    const read = new Map<string, number>();
    await expect(
      engine.loadModelStream({
        config,
        weights: shardedSource(JSON.stringify(j), counted(files, read)),
        totalBytes: null,
      }),
    ).rejects.toThrow(`tensor '${victim}' is in shard ${second}, but the index puts it in ${first}`);
    expect(read.size).toBe(0);
    expect(engine.modelInfo?.name).toBe('before');
    const again = await engine.forward(tokens);
    expect(again.dump.logits).toEqual(want.dump.logits);
  });

  it('refuses a shard whose values go bad in the last shard, leaving the model before', async () => {
    await engine.loadModel({ config, weights: writeSafetensors(tensors), name: 'before' });
    const bad = tensors.map((t, i) =>
      i === tensors.length - 1 ? { ...t, data: t.data.map(() => Number.NaN) } : t,
    );
    const files = writeSharded(bad, 8 << 10);
    await expect(
      engine.loadModelStream({
        config,
        weights: shardedSource(
          files.index,
          [...files.shards].map(([n, b]) => bytesShard(n, b)),
        ),
        totalBytes: null,
      }),
    ).rejects.toThrow(/not finite|NaN/);
    expect(engine.modelInfo?.name).toBe('before');
  });
});
