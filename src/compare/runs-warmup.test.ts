// The runs analysis's warm-up (runs-warmup.ts): a whole analysis of two runs made from the model's own reference
// taps, run B's last dense_h_to_4h output in bf16 — so its why runs — and nothing left behind: the same analysis
// gives the same report before and after it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomModelFiles } from '../model/random-model';
import { warmRunsAnalysis } from './runs-warmup';

let engine: Engine;
const L = 2;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  await engine.loadModel(
    randomModelFiles({ vocab: 97, d: 32, layers: L, heads: 2, ff: 70, rotaryPct: 0.5, parallel: true }, 3),
  );
});
afterAll(() => engine?.dispose());

describe('the runs warm-up', () => {
  it('runs a whole analysis with its why, and the next one is the same as the first', async () => {
    const first = await warmRunsAnalysis(engine, 11);
    expect(first.tokens).toBe(11);
    // Run A is the reference path itself: nothing born; run B is born where it was rounded, its cause named.
    expect(first.sentence).toMatch(new RegExp(`layer ${L - 1}: .*dense_h_to_4h`));
    expect(first.sentence).toContain('output-bf16');
    expect(first.durations.why).toBeGreaterThan(0);
    const again = await warmRunsAnalysis(engine, 11);
    expect(again.sentence).toBe(first.sentence);
  });
});
