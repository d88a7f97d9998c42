// The attention output's heads in another order: each output head matched to the exact head it is closest to.
import { ATTENTION_OPS, type Cause } from '../types';

export const headsPermuted: Cause = {
  id: 'heads-permuted',
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: (s) => {
    // Each output head: the exact head it is closest to.
    const d = s.data;
    const T = d.tokens.length;
    const H = d.cfg.numHeads;
    const hd = d.cfg.headDim;
    const w = H * hd;
    const perm = Array.from({ length: H }, (_, h) => {
      let best = h;
      let bestD = Number.POSITIVE_INFINITY;
      for (let g = 0; g < H; g++) {
        let dist = 0;
        for (let t = 0; t < T; t++)
          for (let e = 0; e < hd; e++)
            dist += (d.recorded[t * w + h * hd + e] - d.exact[t * w + g * hd + e]) ** 2;
        if (dist < bestD) [best, bestD] = [g, dist];
      }
      return best;
    });
    return perm.every((g, h) => g === h)
      ? []
      : [{ params: { perm: perm.join(',') }, variant: { headPerm: perm } }];
  },
  words: (p) => `the output heads are in another order (output heads 0, 1, … hold heads ${p.perm})`,
};
