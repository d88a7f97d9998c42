// The arithmetic of the exact op's variants: GELU's replacements (the products, an fp16 accumulator included, are
// the one fp64 linear's: kernels/cpu/linear.ts).
import { gelu } from '../../kernels/cpu/gelu';
import type { ActFn } from './types';

export function actOf(fn: ActFn): (x: number) => number {
  switch (fn) {
    case 'gelu':
      return gelu;
    case 'gelu-tanh':
      return (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
    case 'gelu-sigmoid':
      return (x) => x / (1 + Math.exp(-1.702 * x));
    case 'relu':
      return (x) => (x > 0 ? x : 0);
    case 'silu':
      return (x) => x / (1 + Math.exp(-x));
  }
}
