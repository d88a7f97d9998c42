// NaN/Inf is a finding, never agreement. Weights holding NaN/Inf are refused at load, so the model here has
// finite weights that overflow fp32 in layer 1: the attention and MLP output biases of channel 3 are 3e38 each
// (finite, below FLT_MAX 3.4e38), so x + attn + mlp is 6e38 = +Inf in fp32 on both paths while the fp64 oracle stays
// finite. Equal infinities give relL2 0 vs floor 0, which must not read as 'agree'.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomConfigJson, randomTensors } from '../model/random-model';
import { writeSafetensors } from '../model/safetensors-write';
import { defaultRunSpec } from '../run/runspec';
import { analyze } from './analyze';

let engine: Engine;
const shape = { vocab: 97, d: 32, layers: 3, heads: 2, ff: 70, rotaryPct: 0.5, parallel: false };
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  const tensors = randomTensors(shape, 5);
  for (const name of ['attention.dense.bias', 'mlp.dense_4h_to_h.bias']) {
    const bias = tensors.find((t) => t.name === `gpt_neox.layers.1.${name}`);
    if (bias === undefined) throw new Error(`test model has no layer-1 ${name}`);
    (bias.data as Float32Array)[3] = 3e38;
  }
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
    const p = r.layers[1].propagated;
    expect(p.nanCount + p.infCount).toBeGreaterThan(0);
  });
});
