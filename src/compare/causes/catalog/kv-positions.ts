// Cache positions lost or read from the wrong place: a window that evicts all but the last W keys (with the first S
// kept as an attention sink, or not), one position dropped (a cache entry never written) or read as zeros (its write
// lost), or key rows read s slots off from some row on (a slot or a page/block mapped wrong). The window and the position from the first row the
// error shows in; on a decode's rows (explain.ts) every window and prompt position up to its first row tried.
import { badRows } from '../rows';
import { ATTENTION_OPS, type Candidate, type Cause } from '../types';

/** At most this many values of a parameter enumerated (evenly spread beyond it). */
const MOST = 48;

const spread = (n: number): number[] =>
  n <= MOST
    ? Array.from({ length: n }, (_, i) => i)
    : Array.from({ length: MOST }, (_, i) => Math.floor((i * n) / MOST));

export const kvPositionsDropped: Cause = {
  id: 'kv-positions-dropped',
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: (s) => {
    const d = s.data;
    const T = d.tokens.length;
    const r = badRows(d)[0] ?? 0;
    const from = s.rows?.from ?? r;
    const out: Candidate[] = [];
    const windows = new Set<string>();
    // A window W drops key j from row j + W on: with a sink of S, key S goes first, at row S + W.
    for (const sink of [0, 1, 2, 4]) {
      const Ws = new Set([r - sink, ...(s.rows ? spread(from - sink + 1).map((w) => w + 1) : [])]);
      for (const W of Ws) {
        if (!(W >= 1 && W < T) || sink >= T || windows.has(`${W}:${sink}`)) continue;
        windows.add(`${W}:${sink}`);
        out.push({
          params: { window: W, sink },
          variant: { keysDropped: sink ? { window: W, sink } : { window: W } },
        });
      }
    }
    const positions = new Set([r - 1, r, ...(s.rows ? spread(from) : [])]);
    for (const j of positions) {
      if (!(j >= 0 && j < T)) continue;
      out.push({ params: { position: j }, variant: { keysDropped: { positions: [j] } } });
      out.push({ params: { position: j, reads: 'zeros' }, variant: { keysZeroed: [j] } });
    }
    return out;
  },
  words: (p) =>
    p.window !== undefined
      ? `the KV cache keeps only the last ${p.window} positions${Number(p.sink) > 0 ? ` and the first ${p.sink}` : ''} (a window evicts the rest)`
      : p.reads === 'zeros'
        ? `cache position ${p.position} reads zeros (its write was lost)`
        : `cache position ${p.position} is dropped (never written or evicted)`,
};

export const kvPositionsMoved: Cause = {
  id: 'kv-positions-moved',
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: (s) => {
    const d = s.data;
    // From the first wrong row's own key on; on a decode's rows, every key as well (a cache read one slot off).
    const froms = s.rows ? [0, s.rows.from] : [badRows(d)[0] ?? 0];
    return froms.flatMap((from) =>
      [1, 2, 4, 8, 16, -1, -2, -4, -8, -16]
        .filter((shift) => Math.abs(shift) < d.tokens.length)
        .map((shift) => ({ params: { shift, from }, variant: { keysMoved: { shift, from } } })),
    );
  },
  words: (p) => {
    const n = Math.abs(Number(p.shift));
    const back = Number(p.shift) > 0;
    const which = Number(p.from) > 0 ? `from position ${p.from} on` : '';
    return `the cached keys and values ${which ? `${which} ` : ''}are read ${n} slot${n === 1 ? '' : 's'} ${back ? 'back' : 'ahead'} (position j read from j ${back ? '−' : '+'} ${n}: a slot or page mapped wrong)`;
  },
};
