// Indexing and layout: output rows or elements shifted, an input row read from the wrong offset, a transposed weight,
// the fused QKV read as [3, heads, head_dim], heads in another order, the causal mask off by one or missing, GPT-J
// rotary instead of GPT-NeoX's, rotary positions shifted.
import { effectiveFloor } from '../../floor';
import { widthOf } from '../exact-op';
import { ALL_OPS, ATTENTION_OPS, type Candidate, type Cause, type OpData, PRODUCT_OPS } from '../types';

const ROW_SHIFTS = [1, 2, 3, 4, -1, -2, -3, -4];

const rowsShifted: Cause = {
  id: 'rows-shifted',
  family: 'layout',
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
    return ROW_SHIFTS.filter((sh) => Math.abs(sh) < T).map((shift): Candidate => {
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
  words: (p) =>
    `the output rows are shifted by ${p.shift} (row t holds row t − ${p.shift})${Number(p.from) > 0 ? ` from row ${p.from} on` : ''}`,
};

const elementsShifted: Cause = {
  id: 'elements-shifted',
  family: 'layout',
  ops: ALL_OPS,
  candidates: () =>
    [1, 2, 3, 4, 5, 6, 7, 8]
      .flatMap((k) => [k, -k])
      .map((shift) => ({ params: { shift }, variant: { elemShift: shift } })),
  words: (p) => `the output is written ${p.shift} elements off (a misaligned write)`,
};

const inputShifted: Cause = {
  id: 'input-shifted',
  family: 'layout',
  ops: PRODUCT_OPS,
  candidates: () =>
    [1, 2, 3, 4, -1, -2].map((shift) => ({ params: { shift }, variant: { inputShift: shift } })),
  words: (p) => `each input row is read ${p.shift} elements along (a tile loaded from the wrong offset)`,
};

const transposed: Cause = {
  id: 'weight-transposed',
  family: 'layout',
  ops: PRODUCT_OPS,
  candidates: (s) => {
    const w = s.data.weights.linear?.weight;
    return w && w.shape[0] === w.shape[1] ? [{ params: {}, variant: { transposed: true } }] : [];
  },
  words: () => 'the weight is used transposed',
};

const qkvLayout: Cause = {
  id: 'qkv-layout',
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: () => [{ params: {}, variant: { rotary: { layout3: true } } }],
  words: () => 'the fused QKV is read as [3, heads, head_dim] instead of [heads, 3, head_dim]',
};

const headsPermuted: Cause = {
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

const causal = (id: string, offset: number | null, words: string): Cause => ({
  id,
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: (): Candidate[] => [
    { params: offset === null ? {} : { offset }, variant: { scores: { causalOffset: offset } } },
  ],
  words: () => words,
});

const causalOffByOne: Cause = {
  id: 'causal-off-by-one',
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: () =>
    [1, -1].map((offset) => ({ params: { offset }, variant: { scores: { causalOffset: offset } } })),
  words: (p) =>
    Number(p.offset) > 0
      ? 'the causal mask is off by one: each position also sees the next token'
      : 'the causal mask is off by one: each position does not see itself',
};

const gptj: Cause = {
  id: 'rotary-gptj',
  family: 'layout',
  ops: ATTENTION_OPS,
  candidates: (s) =>
    s.data.cfg.rotaryNdims > 0 ? [{ params: {}, variant: { rotary: { gptj: true } } }] : [],
  words: () => "rotary pairs interleaved dims (GPT-J's convention) instead of GPT-NeoX's rotate-half",
};

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

const rotaryPositions: Cause = {
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
      const offsets = [-from, 1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, -5, -6, -7, -8].filter(
        (o, i, all) => all.indexOf(o) === i && o !== 0 && from + o >= 0,
      );
      const at = (f: (t: number) => number) => Array.from({ length: T }, (_, t) => (t < from ? t : f(t)));
      for (const offset of offsets)
        out.push({ params: { from, offset }, variant: { rotary: { positions: at((t) => t + offset) } } });
      out.push({ params: { from, offset: 'stuck' }, variant: { rotary: { positions: at(() => from - 1) } } });
    }
    return out;
  },
  words: (p) =>
    p.offset === 'stuck'
      ? `rotary positions stop advancing at row ${p.from} (every later row rotated as position ${Number(p.from) - 1})`
      : Number(p.offset) === -Number(p.from)
        ? `rotary positions restart at 0 from row ${p.from} on`
        : `rotary positions are off by ${Number(p.offset) > 0 ? '+' : ''}${p.offset} from row ${p.from} on`,
};

export const LAYOUT: readonly Cause[] = [
  rowsShifted,
  elementsShifted,
  inputShifted,
  transposed,
  qkvLayout,
  headsPermuted,
  causal('causal-missing', null, 'the causal mask is missing: each position sees the tokens after it'),
  causalOffByOne,
  gptj,
  rotaryPositions,
];
