// Operands: a bias or a LayerNorm parameter dropped or doubled, a residual term dropped, doubled or read from another
// recorded tensor, an op's input read from another recorded tensor (a stale or aliased buffer), one row's output
// broadcast to every row.

import { widthOf } from '../exact-op';
import {
  ALL_OPS,
  type Candidate,
  type Cause,
  NORM_OPS,
  type OpData,
  PRODUCT_OPS,
  RESIDUAL_OPS,
} from '../types';

/** A slot in words: 'layers.2.attn_out' → 'the attention output (layers.2.attn_out)'. */
export function slotWords(slot: string, layer: number | null): string {
  const m = /^layers\.(\d+)\.(.+)$/.exec(slot);
  const own = m && layer !== null && Number(m[1]) === layer;
  const prev = m && layer !== null && Number(m[1]) === layer - 1;
  const part = m ? m[2] : slot;
  const names: Record<string, string> = {
    attn_out: 'the attention output',
    mlp_out: 'the MLP output',
    ln2_in: 'the attention residual (x + attention)',
    ln1: 'the input_layernorm output',
    ln2: 'the post_attention_layernorm output',
    ctx: 'the attention context',
    gelu: 'the GELU output',
    fc1: 'the dense_h_to_4h output',
    qkv: 'the QKV projection',
  };
  if (slot === 'embed' || (prev && part === 'out')) return `the layer's input (${slot})`;
  const what = names[part] ?? slot;
  return own ? `${what}` : `${what} of layer ${m ? m[1] : '?'}`;
}

const hasBias = (d: OpData) => !!d.weights.linear?.bias;

const bias = (m: number, id: string, how: string): Cause => ({
  id,
  family: 'operands',
  ops: PRODUCT_OPS,
  candidates: (s) => (hasBias(s.data) ? [{ params: {}, variant: { bias: m } }] : []),
  words: () => `the bias is ${how}`,
});

const normParam = (which: 'weight' | 'bias'): Cause => ({
  id: `ln-${which}-dropped`,
  family: 'operands',
  ops: NORM_OPS,
  candidates: () => [
    { params: {}, variant: { norm: which === 'weight' ? { noWeight: true } : { noBias: true } } },
  ],
  words: () => `LayerNorm's ${which === 'weight' ? 'weight (gamma)' : 'bias (beta)'} is left out`,
});

const termCoef = (id: string, coef: number, how: string): Cause => ({
  id,
  family: 'operands',
  ops: RESIDUAL_OPS,
  candidates: (s) =>
    s.data.inputs.map((_, j) => ({
      params: { term: s.data.inputSlots[j] },
      variant: { coefs: s.data.inputs.map((__, i) => (i === j ? coef : 1)) },
    })),
  words: (p, d) => `${slotWords(String(p.term), d.layer)} is ${how} in the residual sum`,
});

/** Recorded tensors of the input's size other than the op's own inputs and output. */
function othersLike(d: OpData, n: number) {
  const own = new Set(d.inputSlots);
  return d.others.filter((o) => o.data.length === n && !own.has(o.slot));
}

const wrongTerm: Cause = {
  id: 'residual-wrong-tensor',
  family: 'operands',
  ops: RESIDUAL_OPS,
  candidates: (s) =>
    s.data.inputs.flatMap((x, j) => {
      // Another recorded tensor, or another term of the same sum (one term read twice, another left out).
      const terms = s.data.inputs
        .map((data, i) => ({ slot: s.data.inputSlots[i], data, i }))
        .filter((t) => t.i !== j && t.i > 0 && t.data.length === x.length);
      return [...othersLike(s.data, x.length), ...terms].map(
        (o): Candidate => ({
          params: { term: s.data.inputSlots[j], from: o.slot },
          variant: { replace: { term: j, data: o.data } },
        }),
      );
    }),
  words: (p, d) =>
    `the residual sum reads ${slotWords(String(p.from), d.layer)} where ${slotWords(String(p.term), d.layer)} belongs`,
};

const wrongInput: Cause = {
  id: 'input-wrong-tensor',
  family: 'operands',
  ops: [...PRODUCT_OPS, ...NORM_OPS, 'act'],
  candidates: (s) =>
    othersLike(s.data, s.data.inputs[0].length).map((o) => ({
      params: { from: o.slot },
      variant: { input: o.data },
    })),
  words: (p, d) =>
    `the op reads ${slotWords(String(p.from), d.layer)} instead of its input (a stale or aliased buffer)`,
};

const rowBroadcast: Cause = {
  id: 'row-broadcast',
  family: 'operands',
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

export const OPERANDS: readonly Cause[] = [
  bias(0, 'bias-dropped', 'left out'),
  bias(2, 'bias-doubled', 'added twice'),
  normParam('weight'),
  normParam('bias'),
  termCoef('residual-term-dropped', 0, 'left out'),
  termCoef('residual-term-doubled', 2, 'added twice'),
  wrongTerm,
  wrongInput,
  rowBroadcast,
];
