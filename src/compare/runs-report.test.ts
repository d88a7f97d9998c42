// The verdict of runs in words: the first op born past k × its floor names the run's finding; an end-to-end drift
// decides only where no layer could be checked locally (a half-precision run's rounding adds up past the fp32
// floor while every op of it is within its own); a handoff is a finding of its own.
import { describe, expect, it } from 'vitest';
import { fullMetrics } from './metrics';
import type { RunCheckResult, RunCurve, RunSourceInfo } from './runs-report';
import { verdictOf } from './runs-report';

const m = fullMetrics(new Float32Array([1, 2]), new Float64Array([1, 2]), 'fp32');
const source = (over: Partial<RunSourceInfo> = {}): RunSourceInfo => ({
  id: 'A',
  file: 'a.safetensors',
  sha256: null,
  label: null,
  device: null,
  dtype: null,
  storage: 'BF16',
  tensors: 3,
  ignored: [],
  handoffs: [],
  checks: 2,
  missing: [],
  ...over,
});
const check = (id: string, layer: number | null, ratio: number): RunCheckResult => ({
  run: 'A',
  id,
  op: 'residual',
  layer,
  module: `gpt_neox.layers.${layer}`,
  what: 'the residual add',
  inputs: [],
  output: `gpt_neox.layers.${layer}:out`,
  error: m,
  floor: m,
  floorValue: 1e-7,
  ratio,
  nonFinite: 0,
  born: ratio > 10,
});
const drifting: RunCurve[] = [
  {
    slot: 'layers.3.out',
    floor: m,
    floorValue: 1e-7,
    runs: { A: { metrics: m, ratio: 40, diverged: true } },
    bVsA: null,
  },
];

describe('verdictOf', () => {
  it('names the first born op; a drift alone does not overrule local checks that all agree', () => {
    const born = verdictOf(
      [source()],
      [check('layers.0.residual', 0, 2), check('layers.1.residual', 1, 3e4)],
      [],
      10,
      8,
    );
    expect(born.verdict).toBe('diverged');
    expect(born.findings[0].check).toBe('layers.1.residual');
    const drift = verdictOf(
      [source()],
      [check('layers.0.residual', 0, 2), check('layers.1.residual', 1, 3)],
      drifting,
      10,
      8,
    );
    expect(drift.verdict).toBe('agree');
    expect(drift.sentence).toContain('drifts to 40× the fp32 path');
  });

  it('a drift decides where no layer was checked, and a handoff is reported', () => {
    const onlyLogits = verdictOf([source({ checks: 1 })], [check('lm_head', null, 1)], drifting, 10, 8);
    expect(onlyLogits.verdict).toBe('diverged');
    expect(onlyLogits.sentence).toContain('no layer could be checked locally');
    const handoff = verdictOf(
      [
        source({
          handoffs: [
            {
              slot: 'layers.0.out',
              kept: 'gpt_neox.layers.0:out',
              other: 'gpt_neox.layers.1:in',
              differing: 7,
            },
          ],
        }),
      ],
      [check('layers.0.residual', 0, 1)],
      [],
      10,
      8,
    );
    expect(handoff.verdict).toBe('diverged');
    expect(handoff.sentence).toContain(
      'gpt_neox.layers.1:in differs from gpt_neox.layers.0:out in 7 elements',
    );
  });
});
