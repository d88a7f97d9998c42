// A Pythia-70m-shaped checkpoint (6 layers, d 512, 8 heads, ff 2048, vocab 50304), made here with seeded
// weights and stored as fp16 safetensors (141 MB), runs the full compare in Node on SwiftShader: both paths,
// every tap, the fp64 oracle, local error per layer, determinism. Short prompt: SwiftShader is a CPU.
import { describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomModelFiles } from '../model/random-model';
import { defaultRunSpec } from '../run/runspec';
import { analyze } from './analyze';

describe('Pythia-70m-shaped fp16 checkpoint', () => {
  it('runs a full compare; the fused path agrees within the noise floor', { timeout: 900_000 }, async () => {
    const files = randomModelFiles(
      { vocab: 50304, d: 512, layers: 6, heads: 8, ff: 2048, rotaryPct: 0.25, parallel: true, dtype: 'F16' },
      70,
    );
    expect(files.weights.byteLength).toBeGreaterThan(140e6);
    const engine = await Engine.create(nodeGpu(), nodeShaderSource());
    try {
      const info = await engine.loadModel(files);
      expect(info.params).toBe(70_426_624);
      const r = await analyze(engine, { ...defaultRunSpec(), generate: 0 }, [11, 22, 33, 44]);
      expect(r.layers).toHaveLength(6);
      expect(r.verdict, r.layers.map((l) => l.ratio.toFixed(2)).join(' ')).toBe('agree');
      expect(r.determinism.identical).toBe(true);
      for (const l of r.layers) {
        expect(l.floor.relL2).toBeGreaterThan(0);
        expect(l.floor.relL2).toBeLessThan(1e-5);
      }
      expect(r.taps.filter((t) => t.status === 'fused-away').length).toBe(6 * 5);
      expect(engine.poolStats().bytesInUse).toBe(0);
    } finally {
      engine.dispose();
    }
  });
});
