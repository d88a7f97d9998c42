// Recorded plans (src/engine/plan-cache.ts, recorded.ts, decode.ts): a replay gives the bits of a fresh recording,
// a changed hook (a new object or one changed in place), custom kernel or model is never served a stale recording,
// and generation with the argmax on the GPU (steps replayed, several per submit, both paths interleaved) gives the
// ids of the no-cache loop (argmax on the CPU) per path, faults on; cancellation mid-chunk stops at the step.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { type RandomModelSpec, randomModelFiles } from '../model/random-model';
import { mulberry32 } from '../numeric/random';
import { faultHooks } from '../run/faults';
import { Engine, type GenerateOptions } from './engine';
import type { PlanHooks } from './plan';

let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
});
afterAll(() => engine?.dispose());

const spec: RandomModelSpec = {
  vocab: 97,
  d: 36,
  layers: 2,
  heads: 3,
  ff: 52,
  rotaryPct: 0.5,
  parallel: true,
};

function promptFor(seed: number, T: number): number[] {
  const rng = mulberry32(seed ^ 0x2545f491);
  return Array.from({ length: T }, () => Math.floor(rng() * spec.vocab));
}

const same = (a: Float32Array, b: Float32Array) =>
  a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

describe('recorded forwards', () => {
  it('replay equals a fresh recording; hooks, custom kernels and models invalidate', async () => {
    const seed = freshSeed();
    const what = `seed ${seed}`;
    await engine.loadModel(randomModelFiles(spec, seed));
    const a = promptFor(seed, 13);
    const b = promptFor(seed + 1, 13);
    const stats = () => engine.planCacheStats().forwards;
    const s0 = stats();
    await engine.forward(a, { path: 'fused' });
    const replayed = (await engine.forward(b, { path: 'fused' })).dump.logits;
    expect(stats().misses - s0.misses, what).toBe(1);
    expect(stats().hits - s0.hits, what).toBe(1);
    engine.trimPool(); // drops the recordings: the next forward records afresh
    const fresh = (await engine.forward(b, { path: 'fused' })).dump.logits;
    expect(stats().misses - s0.misses, what).toBe(2);
    expect(same(replayed, fresh), `${what}: replay vs fresh recording`).toBe(true);
    // The last row alone is that row of the whole logits.
    const last = (await engine.forward(b, { path: 'fused', logits: 'last' })).dump.logits;
    expect(same(last, fresh.subarray(12 * spec.vocab)), what).toBe(true);

    // A hook switched on in place (same object) is a new recording, and switched off again the clean one.
    let relu = false;
    const planted = faultHooks([{ id: 'gelu_relu', fromLayer: 0 }]);
    const hooks: PlanHooks = { constants: (k, l) => (relu ? planted.constants!(k, l) : {}) };
    const clean = (await engine.forward(b, { path: 'fused', hooks })).dump.logits;
    expect(same(clean, fresh), what).toBe(true);
    relu = true;
    const faulty = (await engine.forward(b, { path: 'fused', hooks })).dump.logits;
    const want = (await engine.forward(b, { path: 'fused', hooks: planted })).dump.logits;
    expect(same(faulty, clean), `${what}: the fault changes the logits`).toBe(false);
    expect(same(faulty, want), what).toBe(true);
    relu = false;
    expect(same((await engine.forward(b, { path: 'fused', hooks })).dump.logits, clean), what).toBe(true);

    // A custom kernel (ReLU for GELU in the fused MLP) applies at once, and its removal too.
    const file = 'fused/linear_gelu.wgsl';
    const shipped = engine.shaderSource(file);
    const source = shipped.replace('select(gelu_exact(z), max(z, 0.0), FAULT_RELU)', 'max(z, 0.0)');
    expect(source, 'the edit applies to the shipped kernel').not.toBe(shipped);
    engine.setCustomKernel({ file, source });
    expect(same((await engine.forward(b, { path: 'fused' })).dump.logits, want), what).toBe(true);
    engine.setCustomKernel(null);
    expect(same((await engine.forward(b, { path: 'fused' })).dump.logits, fresh), what).toBe(true);

    // Another model of the same shapes: its own logits, not the recording of the previous one.
    await engine.loadModel(randomModelFiles(spec, seed + 7));
    const other = (await engine.forward(b, { path: 'fused' })).dump.logits;
    expect(same(other, fresh), `${what}: another model`).toBe(false);
    const batch = engine.batch();
    try {
      const run = batch.forward(b, { path: 'fused', taps: 'dump' });
      await batch.submit();
      const viaBatch = await batch.read(run.taps.get('logits')!, 13);
      expect(same(viaBatch, other), `${what}: a batch replays the same recording`).toBe(true);
    } finally {
      batch.release();
    }
    expect(engine.poolStats().bytesInUse, what).toBe(0);
  });
});

describe('generation on the GPU, paths interleaved', () => {
  it('ids of the no-cache loop per path, faults on; replays and chunks change nothing', async () => {
    const seed = freshSeed();
    const what = `seed ${seed}`;
    await engine.loadModel(randomModelFiles(spec, seed));
    const hooks = faultHooks([{ id: 'gelu_relu', fromLayer: 1 }]);
    const paths: GenerateOptions[] = [{ path: 'reference' }, { path: 'fused', hooks }];
    const prompt = promptFor(seed, 9);
    const n = 7;
    const want: number[][] = [];
    for (const p of paths) want.push(await engine.generateNoCache(prompt, n, undefined, undefined, p));
    const steps: number[][] = [];
    const got = await engine.generatePaths(prompt, n, paths, (s, ids) => steps.push([s, ...ids]), undefined, {
      chunk: 3,
    });
    expect(got, what).toEqual(want);
    expect(steps, what).toEqual(want[0].map((id, s) => [s, id, want[1][s]]));
    for (const [i, p] of paths.entries())
      expect(await engine.generate(prompt, n, undefined, undefined, p), what).toEqual(want[i]);
    // A replay of the recorded sessions on another prompt of the same length, all steps in one submit.
    const before = engine.planCacheStats().sessions.hits;
    const prompt2 = promptFor(seed + 3, 9);
    const again = await engine.generatePaths(prompt2, n, paths, undefined, undefined, { chunk: n });
    expect(engine.planCacheStats().sessions.hits - before, what).toBe(2);
    for (const [i, p] of paths.entries())
      expect(again[i], what).toEqual(await engine.generateNoCache(prompt2, n, undefined, undefined, p));
  });

  it('an abort in the middle of a chunk stops at that step; nothing is left in use', async () => {
    const seed = freshSeed();
    await engine.loadModel(randomModelFiles(spec, seed));
    const prompt = promptFor(seed, 5);
    const paths: GenerateOptions[] = [{ path: 'reference' }, { path: 'fused' }];
    const ctrl = new AbortController();
    const seen: number[] = [];
    const run = engine.generatePaths(
      prompt,
      9,
      paths,
      (s) => {
        seen.push(s);
        if (s === 5) ctrl.abort();
      },
      ctrl.signal,
      { chunk: 4 },
    );
    await expect(run).rejects.toThrow(/generation cancelled/);
    expect(seen, `seed ${seed}`).toEqual([0, 1, 2, 3, 4, 5]);
    expect(engine.poolStats().bytesInUse).toBe(0);
    const full = await engine.generatePaths(prompt, 9, paths);
    expect(full[0], `seed ${seed}`).toEqual(await engine.generate(prompt, 9));
  });
});
