// Whole-forward parity of the WebGPU reference path (fp32) against the fp64 oracle, on seeded random models
// of both residual styles, both config key styles and odd sizes. Criterion: relative L2 < 1e-5 per layer
// (fp32 rounding through a few layers of d ≤ 128 lands near 1e-7; a wrong op lands near 1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicMetrics } from '../compare/metrics';
import { nodeGpu } from '../gpu/node';
import { oracleForward, oracleGreedy } from '../kernels/cpu/forward';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { type RandomModelSpec, randomModelFiles } from '../model/random-model';
import { loadWeights } from '../model/weights';
import { mulberry32 } from '../numeric/random';
import { Engine } from './engine';

let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
});
afterAll(() => engine?.dispose());

const models: [string, RandomModelSpec][] = [
  [
    'parallel, classic keys',
    { vocab: 300, d: 90, layers: 3, heads: 3, ff: 200, rotaryPct: 0.2, parallel: true },
  ],
  [
    'sequential, rope_parameters keys',
    {
      vocab: 257,
      d: 96,
      layers: 2,
      heads: 4,
      ff: 170,
      rotaryPct: 0.5,
      rotaryBase: 500,
      eps: 1e-6,
      parallel: false,
      keys: 'rope_parameters',
    },
  ],
  [
    'parallel, bf16 on disk, lm_head name',
    {
      vocab: 131,
      d: 40,
      layers: 2,
      heads: 2,
      ff: 72,
      rotaryPct: 1,
      parallel: true,
      dtype: 'BF16',
      head: 'lm_head.weight',
    },
  ],
];

describe('reference forward vs fp64 oracle', () => {
  it.each(models)('%s', async (_name, spec) => {
    const seed = freshSeed();
    const files = randomModelFiles(spec, seed);
    await engine.loadModel(files);
    const cfg = parseConfigText(files.config);
    const w = loadWeights(cfg, files.weights);
    const rng = mulberry32(seed ^ 0x5bd1e995);
    for (const T of [1, 24, 129]) {
      const tokens = Array.from({ length: T }, () => Math.floor(rng() * spec.vocab));
      const { dump } = await engine.forward(tokens);
      const ref = oracleForward(cfg, w, tokens);
      const rows: [string, Float32Array, Float64Array][] = [
        ['embeddings', dump.embeddings, ref.embeddings],
        ...dump.layers.map((l, i): [string, Float32Array, Float64Array] => [
          `layers[${i}]`,
          l,
          ref.layers[i],
        ]),
        ['final_norm', dump.finalNorm, ref.finalNorm],
        ['logits', dump.logits, ref.logits],
      ];
      for (const [what, got, want] of rows) {
        const m = basicMetrics(got, want);
        const msg = `${what} T=${T} seed ${seed}: rel L2 ${m.relL2.toExponential(3)}, non-finite ${m.nonFinite}`;
        expect(m.nonFinite, msg).toBe(0);
        expect(got.length, msg).toBe(want.length);
        expect(m.relL2, msg).toBeLessThan(1e-5);
      }
    }
  });

  it('per-op taps are named like the oracle and agree with it', async () => {
    const seed = freshSeed();
    const spec = models[1][1];
    const files = randomModelFiles(spec, seed);
    await engine.loadModel(files);
    const cfg = parseConfigText(files.config);
    const tokens = [5, 17, 250, 3, 99, 42, 7];
    const { taps } = await engine.forward(tokens, { taps: 'all' });
    const oracleTaps = new Map<string, Float64Array>();
    oracleForward(cfg, loadWeights(cfg, files.weights), tokens, oracleTaps);
    expect([...taps.keys()].sort()).toEqual([...oracleTaps.keys()].sort());
    for (const [name, want] of oracleTaps) {
      const m = basicMetrics(taps.get(name)!, want);
      expect(m.relL2, `${name} seed ${seed}: ${m.relL2}`).toBeLessThan(1e-5);
    }
  });

  it('greedy generation equals the oracle greedy', async () => {
    const seed = freshSeed();
    const spec = models[0][1];
    const files = randomModelFiles(spec, seed);
    await engine.loadModel(files);
    const cfg = parseConfigText(files.config);
    const prompt = [1, 2, 3, 4, 5];
    const got = await engine.generate(prompt, 6);
    expect(got, `seed ${seed}`).toEqual(oracleGreedy(cfg, loadWeights(cfg, files.weights), prompt, 6));
  });

  it('refuses bad tokens and keeps the loaded model', async () => {
    await engine.loadModel(randomModelFiles(models[0][1], 1));
    await expect(engine.forward([])).rejects.toThrow(/prompt is empty/);
    await expect(engine.forward([1, 300])).rejects.toThrow(/token 1 is 300/);
    await expect(engine.forward([1, 2.5])).rejects.toThrow(/token 1 is 2.5/);
    const { dump } = await engine.forward([1, 2]);
    expect(dump.T).toBe(2);
  });

  it('a bad model file leaves the previous model loaded and allocates nothing', async () => {
    await engine.loadModel(randomModelFiles(models[0][1], 2));
    const before = engine.poolStats();
    const bad = randomModelFiles({ ...models[0][1], ff: 201 }, 3);
    const cfgOnly = randomModelFiles(models[0][1], 3).config; // config says ff=200, weights have 201
    await expect(engine.loadModel({ config: cfgOnly, weights: bad.weights })).rejects.toThrow(
      /dense_h_to_4h.*shape/,
    );
    expect(engine.modelInfo?.config.intermediateSize).toBe(200);
    expect(engine.poolStats()).toEqual(before);
    const { dump } = await engine.forward([3, 4, 5]);
    expect(dump.layers).toHaveLength(3);
  });

  it('returns every pooled activation after a forward', async () => {
    await engine.loadModel(randomModelFiles(models[0][1], 4));
    await engine.forward([1, 2, 3]);
    const s = engine.poolStats();
    expect(s.bytesInUse).toBe(0);
    await engine.forward([1, 2, 3]);
    expect(engine.poolStats().bytesLive).toBe(s.bytesLive); // reused, not grown
  });
});
