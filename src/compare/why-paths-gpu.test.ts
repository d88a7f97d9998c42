// The two-path why where the oracle runs on the GPU (why-paths.ts: each op's product multiplied there, whole, on each
// path's own input, and the born op's search asking the GPU for its products, causes/search-products.ts) against the
// same why with the CPU fp64 oracle: for every teaching fault that diverges, the same layer, the same born op, the
// same causes named first with the same parameters, and each op's check within 1e-6 of its ratio (the double-float
// products agree with the fp64 ones to ~1e-12 relative; a ratio moves by about as much).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import { FAULTS, type FaultId } from '../run/faults';
import { defaultRunSpec } from '../run/runspec';
import { analyze } from './analyze';

let engine: Engine;
const L = 3;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  await engine.loadModel(
    randomModelFiles({ vocab: 211, d: 64, layers: L, heads: 4, ff: 150, rotaryPct: 0.5, parallel: true }, 7),
  );
});
afterAll(() => engine?.dispose());

const diverging = FAULTS.filter((f) => f.expect === 'diverges').map((f) => f.id);

describe('the two-path why on the GPU oracle', () => {
  it.each(diverging)('%s: the same born op and cause as on the CPU oracle', async (id: FaultId) => {
    const seed = freshSeed();
    const fromLayer = 1 + (seed % (L - 1));
    const spec = {
      ...defaultRunSpec(),
      model: { kind: 'embedded' as const, id: 'test' },
      fused: [...ALL_FUSED],
      faults: [{ id, fromLayer }],
      seed,
      generate: 0,
    };
    const T = id === 'no_rescale' ? 40 : 20;
    const tokens = Array.from({ length: T }, (_, i) => (i * 37 + seed) % 211);
    const skip = { skip: { determinism: true, bisection: true } };
    const cpu = (await analyze(engine, spec, tokens, { ...skip, oracle: 'cpu' })).why;
    const gpu = (await analyze(engine, spec, tokens, { ...skip, oracle: 'gpu' })).why;
    const ctx = `${id} from layer ${fromLayer} (seed ${seed}): CPU "${cpu?.sentence}" / GPU "${gpu?.sentence}"`;
    expect(cpu, ctx).toBeTruthy();
    expect(gpu?.layer, ctx).toBe(cpu!.layer);
    expect(gpu?.born, ctx).toBe(cpu!.born);
    expect(
      gpu?.cause?.named.map((c) => [c.id, c.params]),
      ctx,
    ).toEqual(cpu!.cause?.named.map((c) => [c.id, c.params]));
    expect(gpu!.checks.length, ctx).toBe(cpu!.checks.length);
    gpu!.checks.forEach((c, j) => {
      const want = cpu!.checks[j];
      expect(c.id, ctx).toBe(want.id);
      expect(Math.abs(c.ratio - want.ratio), `${ctx}: ${c.id}`).toBeLessThanOrEqual(
        1e-6 * Math.max(1, want.ratio),
      );
    });
  });
});
