// One row's output copied to every row: the row is the exact row closest to the recorded rows' mean.
import { widthOf } from '../exact-op';
import { ALL_OPS, type Cause } from '../types';

export const rowBroadcast: Cause = {
  id: 'row-broadcast',
  family: 'operands',
  rows: 'whole',
  ops: ALL_OPS,
  candidates: (s) => {
    // The exact row closest to the recorded rows' mean: where one row was copied to all, that is the row.
    const d = s.data;
    const T = d.tokens.length;
    const w = widthOf(d);
    if (T < 2) return [];
    const mean = new Float64Array(w);
    for (let t = 0; t < T; t++) for (let c = 0; c < w; c++) mean[c] += d.recorded[t * w + c] / T;
    let best = 0;
    let bestD = Number.POSITIVE_INFINITY;
    for (let r = 0; r < T; r++) {
      let dist = 0;
      for (let c = 0; c < w; c++) dist += (d.exact[r * w + c] - mean[c]) ** 2;
      if (dist < bestD) [best, bestD] = [r, dist];
    }
    return [{ params: { row: best }, variant: { broadcastRow: best } }];
  },
  words: (p) => `row ${p.row}'s output is copied to every row`,
};
