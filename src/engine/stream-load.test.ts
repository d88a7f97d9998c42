// Streaming load: the safetensors file is read in chunks (never whole), with progress and cancellation, and the
// model loaded that way computes exactly what the in-memory load does.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomModelFiles } from '../model/random-model';
import { nodeFileStream } from '../model/stream-node';
import { Engine } from './engine';

const spec = {
  vocab: 260,
  d: 64,
  layers: 2,
  heads: 2,
  ff: 100,
  rotaryPct: 0.5,
  parallel: false,
  dtype: 'BF16' as const,
};
let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
});
afterAll(() => engine?.dispose());

describe('streaming model load', () => {
  it('loads from a file stream in small chunks with monotone progress, identical to the in-memory load', async () => {
    const files = randomModelFiles(spec, 41);
    const dir = mkdtempSync(join(tmpdir(), 'stream-'));
    const path = join(dir, 'model.safetensors');
    writeFileSync(path, files.weights);
    await engine.loadModel(files);
    const tokens = [3, 1, 4, 1, 5, 9, 2, 6];
    const want = await engine.forward(tokens);
    const progress: number[] = [];
    const info = await engine.loadModelStream({
      config: files.config,
      weights: nodeFileStream(path, 4096),
      totalBytes: files.weights.byteLength,
      onProgress: (loaded) => progress.push(loaded),
    });
    expect(info.config.hiddenSize).toBe(64);
    expect(progress.length).toBeGreaterThan(10);
    expect(progress.every((p, i) => i === 0 || p >= progress[i - 1])).toBe(true);
    expect(progress.at(-1)).toBe(files.weights.byteLength);
    const got = await engine.forward(tokens);
    expect(Array.from(got.dump.logits)).toEqual(Array.from(want.dump.logits));
  });

  it('cancelling keeps the previous model and rejects with an AbortError', async () => {
    const a = randomModelFiles(spec, 42);
    await engine.loadModel(a);
    const b = randomModelFiles({ ...spec, layers: 3 }, 43);
    const ctrl = new AbortController();
    async function* slow() {
      for (let i = 0; i < b.weights.length; i += 1024) {
        if (i === 8 * 1024) ctrl.abort();
        yield b.weights.subarray(i, i + 1024);
        await new Promise((r) => setTimeout(r, 0));
      }
    }
    await expect(
      engine.loadModelStream({
        config: b.config,
        weights: slow(),
        totalBytes: b.weights.length,
        signal: ctrl.signal,
      }),
    ).rejects.toThrow(/abort/i);
    expect(engine.modelInfo?.config.numLayers).toBe(2);
    expect((await engine.forward([1, 2])).dump.layers).toHaveLength(2);
  });

  it('a truncated stream is one clear error naming the file', async () => {
    const b = randomModelFiles(spec, 44);
    async function* cut() {
      yield b.weights.subarray(0, b.weights.length - 10);
    }
    await expect(
      engine.loadModelStream({ config: b.config, weights: cut(), totalBytes: null }),
    ).rejects.toThrow(/^model\.safetensors: /);
  });
});
