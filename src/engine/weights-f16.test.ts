// fp16 weights on the GPU: for an fp16 checkpoint they are exact (results identical to fp32 storage, half
// the memory); a model over the memory budget is refused before anything is allocated.
import { afterAll, describe, expect, it } from 'vitest';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomModelFiles } from '../model/random-model';
import { Engine, type EngineOptions, estimateWeightBytes } from './engine';

const spec = {
  vocab: 300,
  d: 64,
  layers: 2,
  heads: 2,
  ff: 100,
  rotaryPct: 0.5,
  parallel: true,
  dtype: 'F16' as const,
};
const made: Engine[] = [];
async function engine(opts: EngineOptions = {}) {
  const e = await Engine.create(nodeGpu(), nodeShaderSource(), opts);
  made.push(e);
  return e;
}
afterAll(() => {
  for (const e of made) e.dispose();
});

describe('fp16 weights on the GPU', () => {
  it('an fp16 checkpoint gives bit-identical results with fp16 or fp32 weight storage, at about half the bytes', async () => {
    const files = randomModelFiles(spec, 31);
    const a = await engine({ weights: 'fp32' });
    const b = await engine({ weights: 'fp16', maxBindingBytes: 32 * 1024 }); // and split: f16 binding offsets
    const ia = await a.loadModel(files);
    const ib = await b.loadModel(files);
    expect(ia.weightsOnGpu).toBe('fp32');
    expect(ib.weightsOnGpu).toBe('fp16');
    expect(ib.gpuBytes).toBeLessThan(0.6 * ia.gpuBytes);
    for (const path of ['reference', 'fused'] as const) {
      const tokens = Array.from({ length: 33 }, (_, i) => (i * 89 + 7) % 300);
      const ra = await a.forward(tokens, { path });
      const rb = await b.forward(tokens, { path });
      expect(rb.dispatches).toBeGreaterThan(ra.dispatches); // the LM head really split
      expect(Array.from(rb.dump.logits)).toEqual(Array.from(ra.dump.logits));
      expect(Array.from(rb.dump.embeddings)).toEqual(Array.from(ra.dump.embeddings));
    }
  });

  it('auto keeps small models in fp32', async () => {
    const e = await engine();
    expect((await e.loadModel(randomModelFiles(spec, 32))).weightsOnGpu).toBe('fp32');
  });

  it('refuses a model over the memory budget before allocating anything', async () => {
    const e = await engine({ memoryBudgetBytes: 100_000 });
    const files = randomModelFiles(spec, 33);
    await expect(e.loadModel(files)).rejects.toThrow(/needs 0\.00\d* GiB|more than the/);
    expect(e.modelInfo).toBeNull();
    expect(e.poolStats().bytesLive).toBe(0);
    // Pythia-410m: 1.6 GB of weights in fp32, 0.8 GB in fp16.
    const cfg = { vocabSize: 50304, hiddenSize: 1024, numLayers: 24, intermediateSize: 4096 } as Parameters<
      typeof estimateWeightBytes
    >[0];
    expect(estimateWeightBytes(cfg, false) / 2 ** 30).toBeCloseTo(1.5, 1);
    expect(estimateWeightBytes(cfg, true) / 2 ** 30).toBeCloseTo(0.76, 1);
  });
});
