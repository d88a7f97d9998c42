// NaN/Inf is a finding, never agreement: a model whose layer-1 MLP bias holds one NaN makes both paths NaN
// from layer 1 on; equal NaNs give relL2 0 vs floor 0, which must not read as 'agree'.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomConfigJson, randomTensors } from '../model/random-model';
import { writeSafetensors } from '../model/safetensors';
import { defaultRunSpec } from '../run/runspec';
import { analyze } from './analyze';

let engine: Engine;
const shape = { vocab: 97, d: 32, layers: 3, heads: 2, ff: 70, rotaryPct: 0.5, parallel: false };
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  const tensors = randomTensors(shape, 5);
  const bias = tensors.find((t) => t.name === 'gpt_neox.layers.1.mlp.dense_4h_to_h.bias');
  if (bias === undefined) throw new Error('test model has no layer-1 MLP output bias');
  (bias.data as Float32Array)[3] = Number.NaN;
  await engine.loadModel({
    config: JSON.stringify(randomConfigJson(shape)),
    weights: writeSafetensors(tensors, { format: 'pt' }),
  });
});
afterAll(() => engine?.dispose());

describe('non-finite outputs', () => {
  it('make the verdict diverged at the first layer holding them, never agree', async () => {
    const spec = {
      ...defaultRunSpec(),
      model: { kind: 'embedded' as const, id: 'test' },
      fused: [...ALL_FUSED],
      faults: [],
      generate: 0,
    };
    const r = await analyze(engine, spec, [3, 14, 15, 9, 26, 53, 58]);
    expect(r.verdict).toBe('diverged');
    expect(r.firstDivergentLayer).toBe(1);
    expect(r.layers[0].diverged).toBe(false);
    expect(r.layers[1].propagated.nanCount).toBeGreaterThan(0);
  });
});
