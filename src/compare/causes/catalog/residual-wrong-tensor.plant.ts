import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  // dense_4h_to_h with the residual sum, checked whole: a term read from another term of the sum
  {
    cause: 'residual-wrong-tensor',
    op: 'mlp_residual',
    variant: (d) => ({ replace: { term: 2, data: d.inputs[1] } }),
    params: { term: 'layers.0.out', from: 'layers.1.attn_out' },
  },
  {
    cause: 'residual-wrong-tensor',
    op: 'residual',
    variant: (d) => ({ replace: { term: 2, data: d.others.find((o) => o.slot === 'layers.1.ln1')!.data } }),
    params: { term: 'layers.0.out', from: 'layers.1.ln1' },
  },
];
