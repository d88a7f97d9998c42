// Tensors larger than one storage binding (the 50304-row embedding and LM head of Pythia-160m and up) are split
// across buffers and dispatches. Forced here with a low binding cap: a small model must split, and its results
// must be bit-identical to the unsplit run, on both paths.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomModelFiles } from '../model/random-model';
import { Engine } from './engine';
import { chunkRows } from './gpu-model';

// V·d·4 = 300·64·4 = 76.8 kB: a 64 KiB cap splits the embedding and the LM head into chunks of 256 and 44
// rows and, for T = 80, the [T, rows] logits pieces again (192 rows fit one binding).
const spec = { vocab: 300, d: 64, layers: 2, heads: 2, ff: 100, rotaryPct: 0.5, parallel: true };
const CAP = 64 * 1024;
let whole: Engine;
let split: Engine;
beforeAll(async () => {
  whole = await Engine.create(nodeGpu(), nodeShaderSource());
  split = await Engine.create(nodeGpu(), nodeShaderSource(), { maxBindingBytes: CAP });
  const files = randomModelFiles(spec, 21);
  await whole.loadModel(files);
  await split.loadModel(files);
});
afterAll(() => {
  whole?.dispose();
  split?.dispose();
});

describe('splitting large tensors across buffers', () => {
  it('chunks rows in multiples of 64 under the cap', () => {
    expect(chunkRows(300, 64, CAP)).toBe(256);
    expect(chunkRows(300, 64, 1 << 20)).toBe(300);
    expect(() => chunkRows(300, 4096, 1024)).toThrow(/too large/);
  });

  it.each(['reference', 'fused'] as const)('%s path: split and unsplit runs agree exactly', async (path) => {
    for (const T of [1, 9, 80]) {
      const tokens = Array.from({ length: T }, (_, i) => (i * 97 + 5) % 300); // ids in every chunk
      const a = await whole.forward(tokens, { path, taps: 'all' });
      const b = await split.forward(tokens, { path, taps: 'all' });
      expect(b.dispatches, `T=${T}`).toBeGreaterThan(a.dispatches); // really split
      expect(Array.from(b.dump.embeddings)).toEqual(Array.from(a.dump.embeddings));
      expect(Array.from(b.dump.logits)).toEqual(Array.from(a.dump.logits));
      b.dump.layers.forEach((l, i) => {
        expect(Array.from(l)).toEqual(Array.from(a.dump.layers[i]));
      });
    }
  });

  it('greedy generation agrees', async () => {
    expect(await split.generate([1, 150, 299], 3)).toEqual(await whole.generate([1, 150, 299], 3));
  });

  it('an activation that cannot fit one binding is refused with a clear error, nothing left in use', async () => {
    const tiny = await Engine.create(nodeGpu(), nodeShaderSource(), { maxBindingBytes: 16 * 1024 });
    try {
      await tiny.loadModel(randomModelFiles({ ...spec, vocab: 40, d: 32, ff: 64 }, 3));
      expect((await tiny.forward(Array.from({ length: 30 }, (_, i) => i))).dump.T).toBe(30);
      await expect(tiny.forward(Array.from({ length: 120 }, (_, i) => i % 40))).rejects.toThrow(
        /more than one storage binding.*shorter prompt/,
      );
      expect(tiny.poolStats().bytesInUse).toBe(0);
    } finally {
      tiny.dispose();
    }
  });
});
