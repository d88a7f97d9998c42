// Dropout left on: zeros where the exact output is not zero, the rest scaled by 1 / (1 − p), with p estimated from
// the scale the kept elements carry.
import { ALL_OPS, type Cause } from '../types';

/** Fewer unexpected zeros than this share of the elements is not dropout (a ReLU-like op has its own zeros). */
const MIN_ZEROS = 0.002;

export const dropout: Cause = {
  id: 'dropout',
  family: 'randomness',
  rows: 'whole',
  ops: ALL_OPS.filter((op) => op !== 'layer' && op !== 'lm_head'),
  candidates: (s) => {
    const d = s.data;
    const n = d.recorded.length;
    const dropped = new Uint8Array(n);
    let zeros = 0;
    let xy = 0;
    let xx = 0;
    for (let i = 0; i < n; i++) {
      const e = d.exact[i];
      const r = d.recorded[i];
      if (r === 0 && e !== 0) {
        dropped[i] = 1;
        zeros++;
      } else if (Number.isFinite(r) && Number.isFinite(e)) {
        xy += r * e;
        xx += e * e;
      }
    }
    if (zeros < MIN_ZEROS * n || xx === 0) return [];
    // The kept elements are the exact ones times 1 / (1 - p): least squares gives the scale, the scale gives p.
    const p = 1 - xx / xy;
    if (!(p > 0 && p < 1)) return [];
    return [
      { params: { p: Number(p.toPrecision(3)), dropped: zeros }, variant: { dropout: { p, dropped } } },
    ];
  },
  words: (p) =>
    `dropout is left on (p ≈ ${Number(p.p).toPrecision(2)}: ${p.dropped} elements zeroed, the rest scaled)`,
};
