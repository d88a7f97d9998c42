// The engine on the subgroup GEMM core (EngineOptions.subgroupGemm): the device self-check runs when the engine
// starts and, where it passes, every fused GEMM runs that core — split-K partials, the reductions folded into the
// next op, decode steps of one row — with the bits of the barrier-free core under the same K partition (itself
// the tiled core's): the same dumps, logits and cached ids. An engine that does not ask for the core, or is denied
// the subgroups feature, keeps its policy as it was.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpu } from '../gpu/node';
import type { GemmPolicy } from '../kernels/gemm-configs';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomModelFiles } from '../model/random-model';
import { Engine } from './engine';

// d 40, ff 136 (as src/engine/gemm-split.test.ts): every fused linear split, on the barrier-free core.
const spec = { vocab: 101, d: 40, layers: 2, heads: 2, ff: 136, rotaryPct: 0.5, parallel: true };
const SPLITTING: GemmPolicy = {
  name: 'test: split every fused linear, barrier-free core',
  table: {
    measuredOn: 'test',
    date: '',
    tiles: {},
    kChunks: { '120x40': 16, '40x40': 16, '136x40': 32, '40x136': 64 },
  },
  splitK: true,
  cpu: true,
};
const tokens = [3, 1, 4, 1, 5, 9, 2];

let plain: Engine;
let sub: Engine;
beforeAll(async () => {
  plain = await Engine.create(nodeGpu(), nodeShaderSource(), { gemm: SPLITTING });
  sub = await Engine.create(nodeGpu(), nodeShaderSource(), { gemm: SPLITTING, subgroupGemm: true });
  const files = randomModelFiles(spec, 11);
  await plain.loadModel(files);
  await sub.loadModel(files);
}, 600_000);
afterAll(() => {
  plain?.dispose();
  sub?.dispose();
});

describe('the engine on the subgroup GEMM core', () => {
  it('runs the self-check at start and takes the core where it passes; others keep their policy', () => {
    expect(sub.gemmPolicy.subgroup?.SG).toBe(sub.ctx.subgroupSize);
    expect(sub.gemmPolicy.name).toMatch(/subgroup core/);
    expect(plain.gemmPolicy).toBe(SPLITTING);
  });

  it('gives the barrier-free core’s bits: dumps and logits of a forward, and the cached ids of generation', async () => {
    const a = await sub.forward(tokens, { path: 'fused', timing: true });
    const b = await plain.forward(tokens, { path: 'fused' });
    expect(a.timings!.some((t) => t.label.endsWith('/splitk'))).toBe(true);
    expect(Array.from(a.dump.logits)).toEqual(Array.from(b.dump.logits));
    for (const [i, l] of a.dump.layers.entries())
      expect(Array.from(l), `layer ${i}`).toEqual(Array.from(b.dump.layers[i]));
    // Decode steps (one row) on the subgroup core: the ids of the barrier-free engine's no-cache loop.
    const cached = await sub.generate(tokens, 4, undefined, undefined, { path: 'fused' });
    expect(cached).toEqual(await plain.generateNoCache(tokens, 4, undefined, undefined, { path: 'fused' }));
  }, 600_000);

  it('a device without the subgroups feature keeps the policy’s core', async () => {
    const off = await Engine.create(nodeGpu(), nodeShaderSource(), {
      gemm: SPLITTING,
      subgroupGemm: true,
      disableFeatures: ['subgroups'],
    });
    try {
      expect(off.ctx.subgroupSize).toBeNull();
      expect(off.gemmPolicy).toBe(SPLITTING);
    } finally {
      off.dispose();
    }
  });
});
