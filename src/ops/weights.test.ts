import { describe, expect, it } from 'vitest';
import { preRotary } from '../engine/llama-fused-weights';
import { smallLlamaConfig } from '../model/llama-config';
import type { Tensor } from '../numeric/types';
import { LLAMA_FAMILY } from './families';
import { heldTensors, stepTensors } from './weights';

const t = (n: number): Tensor => ({ shape: [n], data: new Float32Array(n) });
const step = (slot: string) => {
  const s = [...LLAMA_FAMILY.layer, LLAMA_FAMILY.finalNorm].find((x) => x.slot === slot);
  if (!s) throw new Error(`no step ${slot}`);
  return s;
};

describe("a step's weights, by the field it names", () => {
  it('reads a norm as its one tensor, a linear as weight and bias, a weightless step as none', () => {
    const [w, b, n] = [t(6), t(3), t(2)];
    const layer = { q: { weight: w, bias: b }, inputLayernorm: n, qNorm: null };
    expect(stepTensors(layer, step('q'))).toEqual({ weight: w, bias: b });
    expect(stepTensors(layer, step('ln1'))).toEqual({ weight: n, bias: null });
    expect(stepTensors(layer, step('swiglu'))).toEqual({ weight: null, bias: null });
    expect(() => stepTensors(layer, step('q_norm'))).toThrow("q_norm: the weights have no 'qNorm'");
    // Held tensors skip a field the weights leave null (a config without the step), in the steps' order.
    expect(heldTensors(layer, [step('ln1'), step('q'), step('q_norm')])).toEqual([n, w, b]);
  });

  it('finds the steps between the projections and the rotary only where the config has them', () => {
    expect(preRotary(smallLlamaConfig()).map((s) => s.slot)).toEqual([]);
    expect(preRotary(smallLlamaConfig({ flavour: 'qwen3', qkNorm: true })).map((s) => s.slot)).toEqual([
      'q_norm',
      'k_norm',
    ]);
  });
});
