// The output rows shifted by s (row t holds row t − s), from some row r on: each shift of up to 4 either way and the
// shift the last row shows (the exact row nearest to it: the last row lies past any start), the row it starts at
// found as the split that leaves the least error.
import { widthOf } from '../exact-op';
import { ALL_OPS, type Candidate, type Cause } from '../types';

const ROW_SHIFTS = [1, 2, 3, 4, -1, -2, -3, -4];

export const rowsShifted: Cause = {
  id: 'rows-shifted',
  family: 'layout',
  rows: 'whole',
  ops: ALL_OPS,
  candidates: (s) => {
    const d = s.data;
    const T = d.tokens.length;
    const w = widthOf(d);
    const rowErr = (t: number, src: number) => {
      let e = 0;
      for (let c = 0; c < w; c++) {
        const x = src >= 0 && src < T ? d.exact[src * w + c] : 0;
        e += (d.recorded[t * w + c] - x) ** 2;
      }
      return Number.isFinite(e) ? e : Number.MAX_VALUE;
    };
    const plain = Array.from({ length: T }, (_, t) => rowErr(t, t));
    // The last row's source: the exact row it is nearest to.
    let src = T - 1;
    let srcErr = plain[T - 1];
    for (let r = 0; r < T; r++) {
      const e = rowErr(T - 1, r);
      if (e < srcErr) [src, srcErr] = [r, e];
    }
    const shifts = [...new Set([...ROW_SHIFTS, T - 1 - src])].filter((sh) => sh !== 0 && Math.abs(sh) < T);
    return shifts.map((shift): Candidate => {
      // From which row on: the split that leaves the least error (plain before it, shifted from it on).
      const shifted = Array.from({ length: T }, (_, t) => rowErr(t, t - shift));
      let tail = shifted.reduce((a, b) => a + b, 0);
      let head = 0;
      let from = 0;
      let best = tail;
      for (let r = 1; r < T; r++) {
        head += plain[r - 1];
        tail -= shifted[r - 1];
        if (head + tail < best) [best, from] = [head + tail, r];
      }
      return { params: { shift, from }, variant: { rowShift: { shift, from } } };
    });
  },
  words: (p) => {
    const s = Number(p.shift);
    const how =
      s > 0 ? `by ${s} (row t holds row t − ${s})` : `by ${-s} toward the start (row t holds row t + ${-s})`;
    return `the output rows are shifted ${how}${Number(p.from) > 0 ? ` from row ${p.from} on` : ''}`;
  },
};
