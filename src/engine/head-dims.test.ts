// Seeded random models at Pythia's other head dims (80: 2.8b; 96 with full rotary and a sequential residual, as
// RedPajama-INCITE-3B's shape; 256: 1b, two passes over the output dims in flash attention) and an odd one (37),
// through the whole engine: the reference and fused forwards against the fp64 oracle forward per layer, the
// GPU double-float oracle against the CPU fp64 oracle tap by tap (its buffers poisoned with NaN first), and
// greedy generation with the KV cache against the loop that re-runs the whole forward per token, on both paths.
// A head_dim past 256 is refused at load. The kernels themselves are checked at these head dims in their own
// tests (reference, oracle/kernels, fused-linear, flash-attention, kv-cache position-aware kernels).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicMetrics } from '../compare/metrics';
import { nodeGpu } from '../gpu/node';
import { PoisonPool } from '../gpu/poison-pool.testdata';
import { oracleForward } from '../kernels/cpu/forward';
import { relL2 } from '../kernels/oracle/testing';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { type RandomModelSpec, randomModelFiles } from '../model/random-model';
import { loadWeights } from '../model/weights';
import { mulberry32 } from '../numeric/random';
import { Engine } from './engine';
import { readDf } from './oracle-df';
import { GpuOracle } from './oracle-gpu';

let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
});
afterAll(() => engine?.dispose());

/** [head_dim, model]: few heads, d = heads × head_dim, vocab and ff multiples of no tile. */
const MODELS: [number, RandomModelSpec][] = [
  [80, { vocab: 61, d: 160, layers: 1, heads: 2, ff: 70, rotaryPct: 0.25, parallel: true }],
  [
    96,
    { vocab: 53, d: 96, layers: 2, heads: 1, ff: 50, rotaryPct: 1, parallel: false, keys: 'rope_parameters' },
  ],
  [256, { vocab: 47, d: 256, layers: 1, heads: 1, ff: 60, rotaryPct: 0.25, parallel: true }],
  [37, { vocab: 59, d: 74, layers: 1, heads: 2, ff: 50, rotaryPct: 0.5, parallel: false }],
];

function tokensFor(seed: number, T: number, V: number): number[] {
  const rng = mulberry32(seed ^ 0x2545f491);
  return Array.from({ length: T }, () => Math.floor(rng() * V));
}

/** The GPU oracle's taps against the CPU fp64 oracle's: 1e-12 relative L2 each, as in oracle-gpu.test.ts. */
async function checkGpuOracle(what: string, tokens: number[], taps: Map<string, Float64Array>) {
  const { device, pipelines, model } = engine.gpuParts();
  const pool = new PoisonPool(device);
  const oracle = new GpuOracle(device, pipelines, pool, model, { dfFma: false, maxBindingBytes: 1 << 30 });
  const enc = device.createCommandEncoder();
  const run = oracle.forward(enc, tokens, 'all');
  device.queue.submit([enc.finish()]);
  expect([...run.taps.keys()].sort(), what).toEqual([...taps.keys()].sort());
  for (const [name, want] of taps) {
    const e = relL2(await readDf(device, run.taps.get(name)!, tokens.length), want);
    expect(e, `${what} ${name}: rel L2 ${e} (NaN: a non-finite value)`).toBeLessThan(1e-12);
  }
  run.release();
  pool.destroyAll();
}

describe('models at head dims 80, 96, 256 and 37', () => {
  // fp32 against fp64: each layer's output within 1e-5 relative L2 (fp32 rounding over sums of at most a few
  // hundred terms gives ~1e-7; a wrong element, a missed dim or an unwritten one gives ≥ 1e-3 or NaN). The GPU
  // oracle: df ops err by ~2^-47 relative, one f32 rounding anywhere by 6e-8.
  it.each(MODELS)('head_dim %i: both paths and the GPU oracle vs fp64; KV cache', async (hd, spec) => {
    const seed = freshSeed();
    const files = randomModelFiles(spec, seed);
    await engine.loadModel(files);
    const cfg = parseConfigText(files.config);
    expect(cfg.headDim).toBe(hd);
    const w = loadWeights(cfg, files.weights);
    const tokens = tokensFor(seed, 17, spec.vocab);
    const taps = new Map<string, Float64Array>();
    const exact = oracleForward(cfg, w, tokens, taps);
    await checkGpuOracle(`GPU oracle hd=${hd} (seed ${seed})`, tokens, taps);
    for (const path of ['reference', 'fused'] as const) {
      const what = `${path} hd=${hd} (seed ${seed})`;
      const { dump } = await engine.forward(tokens, { path });
      dump.layers.forEach((l, i) => {
        const e = basicMetrics(l, exact.layers[i]).relL2;
        expect(e, `${what} layer ${i}: rel L2 ${e}`).toBeLessThan(1e-5);
      });
      const e = basicMetrics(dump.logits, exact.logits).relL2;
      expect(e, `${what} logits: rel L2 ${e}`).toBeLessThan(1e-5);
      // Decode rows are bit-identical to rows of a whole forward, so the ids are those of the no-cache loop.
      const prompt = tokens.slice(0, 9);
      const cached = await engine.generate(prompt, 4, undefined, undefined, { path });
      const whole = await engine.generateNoCache(prompt, 4, undefined, undefined, { path });
      expect(cached, `${what}: KV cache vs no cache`).toEqual(whole);
    }
    expect(engine.poolStats().bytesInUse).toBe(0);
  });

  it('a head_dim past 256 is refused at load, in one line, and the loaded model stays', async () => {
    await engine.loadModel(randomModelFiles(MODELS[0][1], 1));
    const wide = { vocab: 11, d: 257, layers: 1, heads: 1, ff: 8, rotaryPct: 0, parallel: true };
    await expect(engine.loadModel(randomModelFiles(wide, 1))).rejects.toThrow(
      /^head_dim 257 is not supported: the attention kernels take an integer head_dim 1\.\.256; nothing was allocated$/,
    );
    const { dump } = await engine.forward([1, 2, 3], { path: 'fused' });
    expect(dump.logits.length).toBe(3 * MODELS[0][1].vocab);
  });
});
