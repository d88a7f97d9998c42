// Weights on the GPU without a whole-file or whole-model copy on the CPU: seeded weights made on the GPU equal
// their CPU generator bit for bit (every storage, split buffers) and run a forward; the fp32 CPU copy is made
// only on demand, read back exactly; the user's memory budget refuses a model before anything is allocated;
// a device loss reloads a seeded model from its seed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { randomConfigJson, randomModelFiles } from '../model/random-model';
import { writeSafetensors } from '../model/safetensors-write';
import { seededPlan, seededWeightsCpu } from '../model/seeded-weights';
import { loadWeights } from '../model/weights';
import type { ModelWeights, Tensor } from '../numeric/types';
import { Engine, type EngineOptions } from './engine';

// Sizes off every tile and granule: V = 151 rows, d = 48, ff = 90, odd numels (a packed f16 tail).
const spec = { vocab: 151, d: 48, layers: 2, heads: 2, ff: 90, rotaryPct: 0.5, parallel: true };
const made: Engine[] = [];
async function engine(opts: EngineOptions = {}) {
  const e = await Engine.create(nodeGpu(), nodeShaderSource(), opts);
  made.push(e);
  return e;
}
let plain: Engine;
beforeAll(async () => {
  plain = await engine({ cpuWeights: 'lazy' });
});
afterAll(() => {
  for (const e of made) e.dispose();
});

/** Every tensor of `got` equals `want` bit for bit (NaN never equal); the first difference named. */
function expectSameBits(got: ModelWeights, want: ModelWeights, seed: number) {
  const cfg = parseConfigText(JSON.stringify(randomConfigJson(spec)));
  const names = seededPlan(cfg, want);
  {
    const list = (m: ModelWeights) =>
      [
        m.embedIn,
        ...m.layers.flatMap((l) => [
          l.inputLayernorm.weight,
          l.inputLayernorm.bias,
          l.postAttentionLayernorm.weight,
          l.postAttentionLayernorm.bias,
          l.qkv.weight,
          l.qkv.bias,
          l.dense.weight,
          l.dense.bias,
          l.fc1.weight,
          l.fc1.bias,
          l.fc2.weight,
          l.fc2.bias,
        ]),
        m.finalLayerNorm.weight,
        m.finalLayerNorm.bias,
        m.lmHead,
      ].filter((t): t is Tensor => t !== null);
    const a = list(got);
    const b = list(want);
    a.forEach((t, k) => {
      const bitsA = new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length);
      const bitsB = new Uint32Array(b[k].data.buffer, b[k].data.byteOffset, b[k].data.length);
      const at = bitsA.findIndex((x, i) => x !== bitsB[i] || Number.isNaN(t.data[i]));
      expect(bitsA.length, `${names.get(b[k])?.name} length`).toBe(bitsB.length);
      expect(at, `seed ${seed}: ${names.get(b[k])?.name}[${at}] ${t.data[at]} vs ${b[k].data[at]}`).toBe(-1);
    });
  }
}

describe('seeded weights on the GPU', () => {
  it('equal the CPU generator bit for bit (f32, f16 values in f32, packed f16 split over buffers)', async () => {
    const seed = freshSeed();
    const cfg = parseConfigText(JSON.stringify(randomConfigJson(spec)));
    for (const [dtype, opts] of [
      ['F32', {}],
      ['F16', {}],
      ['F16', { weights: 'fp16', maxBindingBytes: 14_000 }], // embed_in in 2 buffers: rows 0..127, 128..150
    ] as const) {
      const e = Object.keys(opts).length === 0 ? plain : await engine({ ...opts, cpuWeights: 'lazy' });
      const info = await e.loadSeededModel({ ...spec, dtype }, seed);
      expect(info.weightsOnGpu).toBe('weights' in opts ? 'fp16' : 'fp32');
      expect(() => e.weights?.layers).toThrow(/CPU copy of the weights was not made/);
      const got = await e.loadCpuWeights();
      const want = seededWeightsCpu(cfg, seed, dtype);
      expectSameBits(got, want, seed);
      // The bench's distributions: finite, centred, the spread the module header gives (within its factor √2).
      const w = want.layers[1].fc1.weight.data;
      const std = Math.sqrt(w.reduce((s, x) => s + x * x, 0) / w.length);
      expect(std, `seed ${seed}`).toBeGreaterThan(0.6 / Math.sqrt(spec.d));
      expect(std, `seed ${seed}`).toBeLessThan(1.6 / Math.sqrt(spec.d));
    }
  });

  it('run a forward identical to the same weights loaded from a file, and reload from the seed after a device loss', async () => {
    const seed = freshSeed();
    const cfg = parseConfigText(JSON.stringify(randomConfigJson(spec)));
    const e = await engine();
    const tokens = [5, 140, 7, 99, 150, 0, 31];
    const w = seededWeightsCpu(cfg, seed);
    const names = seededPlan(cfg, w);
    const tensors = [...names].map(([t, s]) => ({
      name: s.name,
      dtype: 'F32' as const,
      shape: t.shape,
      data: t.data,
    }));
    await e.loadModel({ config: JSON.stringify(randomConfigJson(spec)), weights: writeSafetensors(tensors) });
    const b = await e.forward(tokens);
    await e.loadSeededModel(spec, seed);
    const a = await e.forward(tokens);
    expect(a.dump.logits.every(Number.isFinite), `seed ${seed}`).toBe(true);
    expect(Array.from(a.dump.logits), `seed ${seed}`).toEqual(Array.from(b.dump.logits));
    e.ctx.device.destroy();
    await e.ctx.lost;
    await e.recover();
    const c = await e.forward(tokens);
    expect(Array.from(c.dump.logits), `seed ${seed}`).toEqual(Array.from(a.dump.logits));
  });
});

describe('the CPU copy and the memory budget', () => {
  it('the lazy CPU copy is the loaded weights exactly; a CPU adapter keeps it from load', async () => {
    const files = randomModelFiles({ ...spec, dtype: 'BF16' }, freshSeed());
    await plain.loadModel(files);
    expect(plain.hasCpuWeights).toBe(false);
    const want = loadWeights(parseConfigText(files.config), files.weights);
    expectSameBits(await plain.loadCpuWeights(), want, 0);
    expect(plain.hasCpuWeights).toBe(true);
    const auto = await engine(); // SwiftShader: the CPU oracle runs here, so the copy is kept at load
    await auto.loadModel(files);
    expect(auto.hasCpuWeights).toBe(true);
    expectSameBits(auto.weights!, want, 0);
  });

  it('a model over the user budget is refused before anything is allocated, saying what it needs and has', async () => {
    const e = await engine();
    const small = randomModelFiles({ ...spec, vocab: 20, d: 16, ff: 20 }, 3);
    await e.loadModel(small);
    const kept = e.poolStats();
    e.setMemoryBudget(50_000);
    const big = randomModelFiles(spec, 4);
    await expect(e.loadModel(big)).rejects.toThrow(
      /^the model needs 0\.00 GiB of GPU memory for its weights, more than the 0\.00 GiB budget set for this run; nothing was allocated$/,
    );
    await expect(e.loadSeededModel(spec, 5)).rejects.toMatchObject({ kind: 'model' });
    expect(e.modelInfo?.config.hiddenSize).toBe(16); // the model before stays
    expect(e.poolStats()).toEqual(kept);
    expect(await e.refusalFor(parseConfigText(big.config))).toMatch(/needs .* more than the .* budget/);
    e.setMemoryBudget(null);
    expect(await e.refusalFor(parseConfigText(big.config))).toBeNull();
    // A CPU adapter (this one) has a default cap: a Pythia-2.8b-shaped config is refused from its numbers alone.
    expect(e.memoryBudget.source).toBe('cpu-adapter');
    const cfg28 = {
      ...randomConfigJson({ ...spec, vocab: 50304, d: 2560, layers: 32, heads: 32, ff: 10240 }),
    };
    expect(await e.refusalFor(parseConfigText(JSON.stringify(cfg28)))).toMatch(
      /needs 5\.17 GiB .*\(in fp16\), more than the 4\.00 GiB budget of a CPU adapter/,
    );
    expect(() => e.setMemoryBudget(-1)).toThrow(/positive number of bytes/);
    expect(e.memoryBudget.maxBufferSize).toBeGreaterThan(0);
  });
});
