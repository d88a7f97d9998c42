// Another layer's KV cache: the keys and values of every position read from another layer's QKV projection (rotated
// as this layer's), as a cache indexed by the wrong layer gives them — which layer, from the recorded projections.
import type { Cause } from '../types';

export const kvOtherLayer: Cause = {
  id: 'kv-other-layer',
  family: 'operands',
  ops: ['attention'],
  candidates: (s) => {
    const d = s.data;
    return d.others.flatMap((o) => {
      const m = /^layers\.(\d+)\.qkv$/.exec(o.slot);
      if (!m || Number(m[1]) === d.layer || o.data.length !== d.inputs[0].length) return [];
      return [{ params: { layer: Number(m[1]) }, variant: { kvFrom: o.data } }];
    });
  },
  words: (p) => `the keys and values are read from layer ${p.layer}'s cache (another layer's KV cache)`,
};
