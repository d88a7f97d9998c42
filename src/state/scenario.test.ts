import { describe, expect, it } from 'vitest';
import { SCENARIOS } from '../run/scenarios';
import { stepAfterRun, stepForLayer, stepForVariant, stepView } from './scenario';

describe('what a scenario step shows', () => {
  it('reads the step’s words', () => {
    expect(stepView('Open layer 1: its local error is large too')).toEqual({ kind: 'ops', layer: 1 });
    expect(stepView('Bisection blames the residual epilogue alone.')).toEqual({ kind: 'bisection' });
    expect(stepView('look at the determinism badge')).toEqual({ kind: 'determinism' });
    expect(stepView('The timing panel shows what the fused path costs')).toEqual({ kind: 'timing' });
    expect(stepView('a later key tile raises the running maximum')).toEqual({ kind: 'heatmap' });
    expect(stepView('Look at the layer chart: layer 0 sits under the noise floor')).toEqual({
      kind: 'curve',
    });
    expect(stepView('Look at the generated texts: they part at the second token')).toEqual({ kind: 'text' });
    expect(stepView('The decode check started by itself')).toEqual({ kind: 'decode' });
    expect(stepView('the single-row decode step rotates its query')).toEqual({ kind: 'decode' });
  });

  it('the scenarios’ steps reach every view, and no step names a layer the model lacks', () => {
    const views = SCENARIOS.flatMap((sc) => sc.steps.map(stepView));
    for (const kind of ['ops', 'bisection', 'determinism', 'timing', 'heatmap', 'curve', 'text', 'decode'])
      expect(
        views.some((v) => v.kind === kind),
        `no step shows ${kind}`,
      ).toBe(true);
    for (const v of views) if (v.kind === 'ops') expect(v.layer).toBeLessThan(4);
  });

  it('follows the page: a layer opened, a run done, a variant opened', () => {
    const steps = ['Run it.', 'Look at the chart.', 'Open layer 2: born here.', 'Open the fixed variant.'];
    expect(stepForLayer(steps, 2)).toBe(2);
    expect(stepForLayer(steps, 1)).toBeNull();
    expect(stepAfterRun(steps, 0)).toBe(1);
    expect(stepAfterRun(steps, 2)).toBe(2);
    expect(stepForVariant(steps)).toBe(3);
  });
});
