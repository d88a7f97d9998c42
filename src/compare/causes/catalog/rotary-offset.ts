// Rotary positions that jump, restart at 0, stop advancing or stay at 0 mid-sequence (a decode step rotated as
// position 0): from the first row past k × the floor (or the row before it) on, each offset of up to 8 either way, a
// restart, a stop and position 0 tried.
import { effectiveFloor } from '../../floor';
import { widthOf } from '../exact-op';
import { rowWords } from '../rows';
import { ATTENTION_OPS, type Candidate, type Cause, type OpData } from '../types';

/** The first row whose RMS error passes k × the floor's (where a fault that starts mid-sequence starts). */
function firstBadRow(d: OpData): number {
  const T = d.tokens.length;
  const w = widthOf(d);
  let sq = 0;
  for (let i = 0; i < T * w; i++) sq += d.exact[i] * d.exact[i];
  const bar = d.k * effectiveFloor(d.floor, 'relL2', d.precision, 0) * Math.sqrt(sq / (T * w));
  for (let t = 0; t < T; t++) {
    let e = 0;
    for (let c = 0; c < w; c++) e += (d.recorded[t * w + c] - d.exact[t * w + c]) ** 2;
    if (!(Math.sqrt(e / w) <= bar)) return t;
  }
  return 0;
}

export const rotaryOffset: Cause = {
  id: 'rotary-offset',
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: (s) => {
    // Relative positions are all attention sees, so only positions that jump (or stop) mid-sequence show: from the
    // first wrong row r on, positions t + offset (restart: offset -r) or r - 1 (stuck), tried at r and r - 1.
    const d = s.data;
    const T = d.tokens.length;
    if (d.cfg.rotaryNdims === 0) return [];
    const r0 = firstBadRow(d);
    const out: Candidate[] = [];
    for (const from of [r0 - 1, r0].filter((r) => r >= 1 && r < T)) {
      // (a generation's decode rotated from 0 again: position p as p − prompt length)
      const restart = d.prefill !== undefined ? [-d.prefill] : [];
      const offsets = [-from, ...restart, 1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, -5, -6, -7, -8].filter(
        (o, i, all) => all.indexOf(o) === i && o !== 0 && from + o >= 0,
      );
      const at = (f: (t: number) => number) => Array.from({ length: T }, (_, t) => (t < from ? t : f(t)));
      for (const offset of offsets)
        out.push({ params: { from, offset }, variant: { rotary: { positions: at((t) => t + offset) } } });
      out.push({ params: { from, offset: 'stuck' }, variant: { rotary: { positions: at(() => from - 1) } } });
      out.push({ params: { from, offset: 'zero' }, variant: { rotary: { positions: at(() => 0) } } });
    }
    return out;
  },
  rows: 'whole',
  words: (p, d) => {
    const at = rowWords(Number(p.from), d);
    return p.offset === 'zero'
      ? `every row from ${at} on rotated as position 0`
      : p.offset === 'stuck'
        ? `rotary positions stop advancing at ${at} (every later row rotated as position ${Number(p.from) - 1})`
        : Number(p.offset) === -Number(p.from)
          ? `rotary positions restart at 0 from ${at} on`
          : d.prefill !== undefined && Number(p.offset) === -d.prefill
            ? `rotary positions from ${at} on counted from the end of the prompt (position p rotated as p − ${d.prefill})`
            : `rotary positions are off by ${Number(p.offset) > 0 ? '+' : ''}${p.offset} from ${at} on`;
  },
};
