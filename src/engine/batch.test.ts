// A batch records several forwards into one submit with every tap kept on the GPU: its taps must be bit-identical
// to engine.forward's (the same kernels on the same inputs), a layer run on an input already on the GPU must equal
// the same layer run on that input uploaded from the CPU, and every pooled byte must come back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import { mulberry32 } from '../numeric/random';
import { Engine } from './engine';

let engine: Engine;
const seed = freshSeed();
beforeAll(async () => {
  // A small LM-head binding cap splits the logits into column pieces, so split taps are covered too.
  engine = await Engine.create(nodeGpu(), nodeShaderSource(), { maxBindingBytes: 32 * 1024 });
  await engine.loadModel(
    randomModelFiles(
      { vocab: 301, d: 36, layers: 3, heads: 3, ff: 70, rotaryPct: 0.5, parallel: false },
      seed,
    ),
  );
});
afterAll(() => engine?.dispose());

function sameBits(a: Float32Array, b: Float32Array, what: string) {
  expect(a.length, what).toBe(b.length);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  const first = ua.findIndex((v, i) => v !== ub[i]);
  expect(first, `${what}: first differing element (seed ${seed})`).toBe(-1);
}

describe('GpuBatch', () => {
  it('gives the taps of engine.forward, bit for bit, for two paths in one submit', async () => {
    const rng = mulberry32(seed);
    const tokens = Array.from({ length: 37 }, () => Math.floor(rng() * 301));
    const ref = await engine.forward(tokens, { path: 'reference', taps: 'all' });
    const fused = await engine.forward(tokens, { path: 'fused', taps: 'all' });
    const before = engine.poolStats().bytesInUse;
    const batch = engine.batch();
    try {
      const bRef = batch.forward(tokens, { path: 'reference', taps: 'all' });
      const bFused = batch.forward(tokens, { path: 'fused', taps: 'dump' });
      await batch.submit();
      for (const [name, data] of ref.taps) {
        const tap = bRef.taps.get(name);
        expect(tap, name).toBeDefined();
        sameBits(await batch.read(tap!, tokens.length), data, `reference ${name}`);
      }
      expect(bRef.taps.get('logits')?.parts?.length, 'logits split into pieces').toBeGreaterThan(1);
      sameBits(
        await batch.read(bFused.taps.get('logits')!, tokens.length),
        fused.dump.logits,
        'fused logits',
      );
      for (let i = 0; i < 3; i++)
        sameBits(
          await batch.read(bFused.taps.get(`layers.${i}.out`)!, tokens.length),
          fused.dump.layers[i],
          `${i}`,
        );
      expect(bFused.taps.has('layers.0.ln1'), "'dump' keeps only the dump").toBe(false);
    } finally {
      batch.release();
    }
    expect(engine.poolStats().bytesInUse).toBe(before);
  });

  it('runs every layer alone on an input already on the GPU, all in one submit', async () => {
    const rng = mulberry32(seed + 1);
    const T = 29;
    const tokens = Array.from({ length: T }, () => Math.floor(rng() * 301));
    const whole = await engine.forward(tokens, { path: 'reference' });
    const batch = engine.batch();
    try {
      const full = batch.forward(tokens, { path: 'reference', taps: 'dump' });
      const singles = [0, 1, 2].map((i) =>
        batch.forward(tokens, {
          path: 'fused',
          taps: 'dump',
          layers: {
            from: i,
            to: i + 1,
            input: full.taps.get(i === 0 ? 'embed' : `layers.${i - 1}.out`)!.buffer,
          },
        }),
      );
      await batch.submit();
      for (let i = 0; i < 3; i++) {
        const input = i === 0 ? whole.dump.embeddings : whole.dump.layers[i - 1];
        const cpuInput = await engine.forward(tokens, {
          path: 'fused',
          layers: { from: i, to: i + 1, input },
        });
        const got = await batch.read(singles[i].taps.get(`layers.${i}.out`)!, T);
        sameBits(got, cpuInput.dump.layers[0], `layer ${i} on a GPU input`);
      }
    } finally {
      batch.release();
    }
  });
});
