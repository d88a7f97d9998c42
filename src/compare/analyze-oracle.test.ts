// The analysis on the GPU, checked against the slower exact route: the GPU double-float oracle against the CPU
// fp64 oracle (same verdict, floors equal to what the oracle difference allows), the GPU-reduced metrics against
// src/compare/metrics.ts on dumps read back, and a failed double-float self-test falling back to the CPU oracle
// with the reason in the report.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import { nodeGpu } from '../gpu/node';
import { oracleForward } from '../kernels/cpu/forward';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import { mulberry32 } from '../numeric/random';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import { analyze } from './analyze';
import { fullMetrics } from './metrics';

const seed = freshSeed();
let engine: Engine;
const shape = { vocab: 113, d: 44, layers: 3, heads: 4, ff: 90, rotaryPct: 0.25, parallel: true };
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  await engine.loadModel(randomModelFiles(shape, seed));
});
afterAll(() => engine?.dispose());

const spec = (over: Partial<RunSpec> = {}): RunSpec => ({
  ...defaultRunSpec(),
  model: { kind: 'embedded', id: 'test' },
  fused: [...ALL_FUSED],
  faults: [],
  generate: 0,
  ...over,
});

/** Close in the way the oracles allow: both are within 1e-12 of exact, and the GPU sums are good to 1e-6. */
function closeFloor(got: number, want: number, what: string) {
  expect(Math.abs(got - want), `${what}: ${got} vs ${want} (seed ${seed})`).toBeLessThanOrEqual(
    1e-11 + 1e-6 * Math.abs(want),
  );
}

describe('analysis with the GPU oracle and GPU metrics', () => {
  it('agrees with the CPU oracle, and its metrics with metrics.ts on the dumps', async () => {
    const rng = mulberry32(seed);
    const tokens = Array.from({ length: 19 }, () => Math.floor(rng() * shape.vocab));
    const s = spec();
    // The GPU route (GPU oracle, GPU metrics) against the CPU route (CPU oracle, metrics.ts on read-back tensors).
    const gpu = await analyze(engine, s, tokens, {
      oracle: 'gpu',
      metrics: 'gpu',
      skip: { bisection: true },
    });
    const cpu = await analyze(engine, s, tokens, {
      oracle: 'cpu',
      metrics: 'cpu',
      skip: { bisection: true },
    });
    expect([gpu.metricsOn, cpu.metricsOn]).toEqual(['gpu', 'cpu']);
    expect(gpu.oracle.kind, gpu.oracle.reason).toBe('gpu');
    expect(gpu.oracle.selfTest?.ok).toBe(true);
    expect(cpu.oracle.kind).toBe('cpu');
    expect(gpu.verdict).toBe(cpu.verdict);
    expect(gpu.firstDivergentLayer).toBe(cpu.firstDivergentLayer);
    // The slow exact route: dumps read back, the CPU fp64 oracle, metrics.ts.
    const ref = await engine.forward(tokens, { path: 'reference' });
    const fused = await engine.forward(tokens, { path: 'fused' });
    const exact = oracleForward(engine.modelInfo!.config, engine.weights!, tokens);
    for (let i = 0; i < shape.layers; i++) {
      for (const r of [gpu, cpu]) {
        closeFloor(
          r.layers[i].floor.relL2,
          fullMetrics(ref.dump.layers[i], exact.layers[i], 'fp32').relL2,
          `floor ${i}`,
        );
        const p = fullMetrics(fused.dump.layers[i], ref.dump.layers[i], 'fp32');
        expect(r.layers[i].propagated.maxUlp, `layer ${i}`).toBe(p.maxUlp);
        expect(r.layers[i].propagated.nanCount).toBe(p.nanCount);
        closeFloor(r.layers[i].propagated.relL2, p.relL2, `propagated ${i}`);
      }
      closeFloor(gpu.layers[i].localFloor.relL2, cpu.layers[i].localFloor.relL2, `local floor ${i}`);
      closeFloor(gpu.layers[i].local.relL2, cpu.layers[i].local.relL2, `local ${i}`);
    }
    closeFloor(
      gpu.logits.floor.relL2,
      fullMetrics(ref.dump.logits, exact.logits, 'fp32').relL2,
      'logits floor',
    );
    for (const t of gpu.taps) {
      const c = cpu.taps.find((x) => x.name === t.name);
      if (t.refVsOracle && c?.refVsOracle) closeFloor(t.refVsOracle.relL2, c.refVsOracle.relL2, t.name);
      expect(t.vsReference?.maxAbs).toBe(c?.vsReference?.maxAbs);
    }
  });

  it('falls back to the CPU oracle, saying why, when the double-float self-test fails', async () => {
    const r = await analyze(engine, spec(), [5, 6, 7], {
      oracle: 'gpu',
      selfTest: { dfBreak: 2 },
      skip: { bisection: true, determinism: true, local: true },
    });
    expect(r.oracle.kind).toBe('cpu');
    expect(r.oracle.selfTest?.ok).toBe(false);
    expect(r.oracle.reason).toMatch(/self-test/);
    expect(r.layers.every((l) => Number.isFinite(l.floor.relL2))).toBe(true);
  });
});
