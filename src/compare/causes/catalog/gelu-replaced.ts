// Another function in GELU's place: its tanh (HF's gelu_new) or sigmoid approximation, ReLU or SiLU.
import { ACT_OPS, type ActFn, type Cause } from '../types';

const act = (fn: ActFn, words: string): Cause => ({
  id: fn,
  family: 'function',
  ops: ACT_OPS,
  candidates: () => [{ params: {}, variant: { act: fn } }],
  words: () => words,
});

export const geluTanh = act(
  'gelu-tanh',
  "GELU by its tanh approximation (HF's gelu_new) instead of the exact erf form",
);
export const geluSigmoid = act('gelu-sigmoid', 'GELU by its sigmoid approximation, x·σ(1.702x)');
export const relu = act('relu', 'ReLU in place of GELU');
export const silu = act('silu', 'SiLU in place of GELU');
