// A step's weights, read from the layer's (or the model's) weights by the field the step names (OpStep.weight):
// the engine's uploads and launches reach an op's weights this way, not by the field's name.

import type { LinearWeights, Tensor } from '../numeric/types';
import type { OpStep } from './types';

export interface StepTensors {
  weight: Tensor | null;
  bias: Tensor | null;
}

/**
 * The weight (and bias) the step reads from `owner` (a layer's weights, or the model's at the top): a linear's
 * LinearWeights or a norm's one Tensor. None for a step that reads no weight; an absent field the step names is
 * an error naming both (a present step always has its weights).
 */
export function stepTensors(owner: object, step: OpStep): StepTensors {
  if (!step.weight) return { weight: null, bias: null };
  const v = (owner as Record<string, unknown>)[step.weight] as Tensor | LinearWeights | null | undefined;
  if (!v) throw new Error(`${step.slot}: the weights have no '${step.weight}'`);
  if ('data' in v) return { weight: v, bias: null };
  return { weight: v.weight, bias: v.bias };
}

/** Every tensor the steps read from `owner` that it holds (a step left out by the config may hold none). */
export function heldTensors(owner: object, steps: readonly OpStep[]): Tensor[] {
  const out: Tensor[] = [];
  for (const s of steps) {
    if (!s.weight || !(owner as Record<string, unknown>)[s.weight]) continue;
    const { weight, bias } = stepTensors(owner, s);
    if (weight) out.push(weight);
    if (bias) out.push(bias);
  }
  return out;
}
