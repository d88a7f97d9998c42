import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  // dense_h_to_4h with its GELU, checked whole
  { cause: 'input-shifted', op: 'mlp_up', variant: () => ({ inputShift: 2 }), params: { shift: 2 } },
  { cause: 'input-shifted', op: 'fc1', variant: () => ({ inputShift: 2 }), params: { shift: 2 } },
  { cause: 'input-shifted', op: 'qkv', variant: () => ({ inputShift: -3 }), params: { shift: -3 } },
];
