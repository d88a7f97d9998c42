// The GPU memory a Llama-family model's passes hold, as the page's counter reads it (Engine.poolStats; the
// family's forwards make their own buffers, counted by gpu/buffer-count.ts): while a forward or a generation of
// either path runs, at least its activations ((layers + 1) residual rows of [T, d] fp32, each pass's own buffers)
// are in use; once it ends, or is cancelled, nothing is, weights uploaded inside a pass (a fused kernel off) included. Weights are not counted (the page shows them apart).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { Engine } from './engine';

const DIR = 'src/model/testdata/llama/llama-gqa-llama3';

let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
});
afterAll(() => engine?.dispose());

describe("a Llama-family model's GPU memory in use", () => {
  it('counts what each pass holds while it runs, and nothing after it', async () => {
    const info = await engine.loadModel({
      config: readFileSync(join(DIR, 'config.json'), 'utf8'),
      weights: new Uint8Array(readFileSync(join(DIR, 'model.safetensors'))),
      name: 'llama-gqa-llama3',
    });
    expect(info.family).toBe('llama');
    const { hiddenSize: d, numLayers: L, vocabSize: V } = info.config;
    const T = 7; // not a multiple of any tile
    const tokens = Array.from({ length: T }, (_, i) => (i * 37 + 5) % V);
    // Every residual row a forward writes is a buffer of its own: a lower bound of what it holds.
    const activations = (L + 1) * T * d * 4;
    expect(engine.poolStats().bytesInUse).toBe(0);
    for (const path of ['reference', 'fused'] as const) {
      // A pass makes its buffers before its first wait: counted as soon as it has started.
      const pass = engine.forward(tokens, { path });
      const during = engine.poolStats();
      expect(during.bytesInUse, path).toBeGreaterThanOrEqual(activations);
      expect(during.buffersInUse, path).toBeGreaterThan(L);
      await pass;
      expect(engine.poolStats(), path).toEqual({
        bytesLive: 0,
        bytesInUse: 0,
        buffersLive: 0,
        buffersInUse: 0,
      });
    }
    // Some fused kernels off (as bisection runs them): the fused path uploads the projections it then needs apart
    // at their first use, inside the pass; those are weights, not the pass's, and are not left counted after it.
    await engine.forward(tokens, { path: new Set(['flash_attention', 'gemm']) });
    expect(engine.poolStats().bytesInUse).toBe(0);
    // A generation on both paths: its KV caches and forwards counted while it runs, released after.
    const gen = engine.generatePaths(tokens, 3, [{ path: 'reference' }, { path: 'fused' }]);
    expect(engine.poolStats().bytesInUse).toBeGreaterThanOrEqual(activations);
    const ids = await gen;
    expect(ids.map((x) => x.length)).toEqual([3, 3]);
    expect(engine.poolStats().bytesInUse).toBe(0);
    // A generation cancelled part-way (after its first path) leaves nothing counted.
    const stop = new AbortController();
    const cancelled = engine.generatePaths(
      tokens,
      3,
      [{ path: 'fused' }, { path: 'reference' }],
      undefined,
      stop.signal,
    );
    expect(engine.poolStats().bytesInUse).toBeGreaterThan(0);
    stop.abort();
    await expect(cancelled).rejects.toThrow('generation cancelled');
    expect(engine.poolStats().bytesInUse).toBe(0);
  });
});
