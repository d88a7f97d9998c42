// GPU timing: one timestamp pair per dispatch, labelled by op, summed per layer; "unavailable" (null) when
// the device has no timestamp-query. Durations are never compared with anything (CPU-emulated GPU).
import { describe, expect, it } from 'vitest';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomModelFiles } from '../model/random-model';
import { Engine } from './engine';
import { summarizeTimings } from './timing';

const spec = { vocab: 101, d: 40, layers: 2, heads: 2, ff: 72, rotaryPct: 0.5, parallel: true };

describe('per-op GPU timing', () => {
  it('gives one non-negative time per dispatch, labelled like the plan, for both paths', async () => {
    const engine = await Engine.create(nodeGpu(), nodeShaderSource());
    try {
      expect(engine.features.timestampQuery).toBe(true); // SwiftShader has it
      await engine.loadModel(randomModelFiles(spec, 3));
      for (const path of ['reference', 'fused'] as const) {
        const r = await engine.forward([1, 2, 3, 4], { path, timing: true });
        expect(r.timings).not.toBeNull();
        expect(r.timings!.length).toBe(r.dispatches);
        expect(r.timings!.every((t) => t.ns >= 0 && Number.isFinite(t.ns))).toBe(true);
        const s = summarizeTimings(r.timings!, 2);
        expect(s.ops[0].label).toBe('embed');
        expect(s.ops.filter((o) => o.layer === 1).length).toBe(path === 'fused' ? 6 : 12);
        expect(s.perLayer.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(s.totalNs);
      }
      // The dump is the same with and without timing (timing changes only how passes are split).
      const a = await engine.forward([5, 6, 7], { path: 'fused', timing: true });
      const b = await engine.forward([5, 6, 7], { path: 'fused' });
      expect(Array.from(a.dump.logits)).toEqual(Array.from(b.dump.logits));
    } finally {
      engine.dispose();
    }
  });

  it('reports timing as unavailable (null) without timestamp-query', async () => {
    const engine = await Engine.create(nodeGpu(), nodeShaderSource(), {
      disableFeatures: ['timestamp-query'],
    });
    try {
      expect(engine.features.timestampQuery).toBe(false);
      await engine.loadModel(randomModelFiles(spec, 4));
      const r = await engine.forward([1, 2], { timing: true });
      expect(r.timings).toBeNull();
      expect(r.dump.logits.length).toBe(2 * 101);
    } finally {
      engine.dispose();
    }
  });

  it('summarizes labels into layers and kinds', () => {
    const s = summarizeTimings(
      [
        { label: 'embed', ns: 5 },
        { label: 'layers.0.ln1', ns: 10 },
        { label: 'layers.1.ln1', ns: 20 },
        { label: 'layers.1.flash_attention', ns: 7 },
        { label: 'logits', ns: 3 },
      ],
      2,
    );
    expect(s.totalNs).toBe(45);
    expect(s.perLayer).toEqual([10, 27]);
    expect(s.perKind).toEqual({ embed: 5, ln1: 30, flash_attention: 7, logits: 3 });
  });
});
