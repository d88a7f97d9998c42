// Device loss and memory: a lost device is reported as such (never a hang or a wrong answer), the engine
// recovers with the user's model, and pooled memory is returned and does not grow over repeated runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnalysisCancelled, analyze } from '../compare/analyze';
import { DeviceLostError } from '../gpu/device';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomModelFiles } from '../model/random-model';
import { defaultRunSpec } from '../run/runspec';
import { Engine } from './engine';

const spec = { vocab: 150, d: 48, layers: 2, heads: 2, ff: 90, rotaryPct: 0.5, parallel: true };
let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
});
afterAll(() => engine?.dispose());

describe('device loss', () => {
  it('is reported, then recover() restores the model and identical results', async () => {
    await engine.loadModel(randomModelFiles(spec, 11));
    const tokens = [4, 8, 15, 16, 23, 42];
    const before = await engine.forward(tokens, { path: 'fused' });
    engine.ctx.device.destroy();
    await engine.ctx.lost;
    expect(engine.lost).toBe(true);
    await expect(engine.forward(tokens)).rejects.toBeInstanceOf(DeviceLostError);
    await expect(engine.forward(tokens)).rejects.toThrow(/GPU device lost/);
    await engine.recover();
    expect(engine.lost).toBe(false);
    expect(engine.modelInfo?.config.hiddenSize).toBe(48);
    const after = await engine.forward(tokens, { path: 'fused' });
    expect(Array.from(after.dump.logits)).toEqual(Array.from(before.dump.logits));
  });

  it('a loss in the middle of a forward rejects with DeviceLostError instead of hanging', async () => {
    await engine.loadModel(randomModelFiles(spec, 12));
    const run = engine.forward(
      Array.from({ length: 40 }, (_, i) => i),
      { taps: 'all' },
    );
    engine.ctx.device.destroy();
    await expect(run).rejects.toBeInstanceOf(DeviceLostError);
    await engine.recover();
    const { dump } = await engine.forward([1, 2, 3]);
    expect(dump.logits.length).toBe(3 * 150);
  });
});

describe('memory', () => {
  it('returns every pooled byte after runs and does not grow over repeated runs', async () => {
    await engine.loadModel(randomModelFiles(spec, 13));
    const tokens = [1, 2, 3, 4, 5, 6, 7];
    await engine.forward(tokens, { path: 'fused', taps: 'all' });
    const first = engine.poolStats();
    expect(first.bytesInUse).toBe(0);
    for (let i = 0; i < 5; i++) {
      await engine.forward(tokens, { path: i % 2 ? 'fused' : 'reference', taps: 'all' });
      await engine.forward(tokens, { path: 'reference' });
    }
    const later = engine.poolStats();
    expect(later.bytesInUse).toBe(0);
    // The reference path needs the score buffers the fused one does not: allow what both need, no more.
    const both = engine.poolStats().bytesLive;
    await engine.forward(tokens, { path: 'fused' });
    await engine.forward(tokens, { path: 'reference' });
    expect(engine.poolStats().bytesLive).toBe(both);
  });

  it('a cancelled analysis stops and leaves nothing in use', async () => {
    await engine.loadModel(randomModelFiles(spec, 14));
    const ctrl = new AbortController();
    const run = analyze(engine, { ...defaultRunSpec(), generate: 4 }, [5, 6, 7, 8, 9], {
      signal: ctrl.signal,
      onProgress: (phase) => {
        if (phase === 'local') ctrl.abort();
      },
    });
    await expect(run).rejects.toBeInstanceOf(AnalysisCancelled);
    expect(engine.poolStats().bytesInUse).toBe(0);
  });

  it('unloading a model frees its weights and the pool', async () => {
    await engine.loadModel(randomModelFiles(spec, 15));
    await engine.forward([1, 2, 3]);
    engine.unloadModel();
    expect(engine.poolStats().bytesLive).toBe(0);
    expect(engine.modelInfo).toBeNull();
  });
});
