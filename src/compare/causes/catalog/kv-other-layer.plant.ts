import { mulberry32, randn } from '../../../numeric/random';
import type { Plant } from '../plant.testdata';

export const PLANTS: Plant[] = [
  {
    cause: 'kv-other-layer',
    op: 'attention',
    variant: (d) => {
      // layer 0's projection recorded beside this one (layer 1's), read by the decode steps (the last five rows)
      const data = randn(mulberry32(d.tokens.length * 31 + d.cfg.hiddenSize), d.inputs[0].length);
      d.others.push({ slot: 'layers.0.qkv', name: 'gpt_neox.layers.0.attention.query_key_value:out', data });
      return { kvFrom: data, rows: { from: d.tokens.length - 5, to: d.tokens.length } };
    },
    params: { layer: 0 },
    rowsFrom: (d) => d.tokens.length - 5,
  },
];
