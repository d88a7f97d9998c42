// The anatomy of an error at one op: where in the tensor it lives (which rows, which heads / q, k, v / rotary dims /
// stretch of the MLP width), what shape it has (the same vector in every row, a few scattered elements, everywhere),
// and its size in units of each storage type's rounding — computed from the exact re-run and the recorded output.
import { FORMATS, type NumFormat, ulpOf } from '../../numeric/round';
import { effectiveFloor } from '../floor';
import { medianOf } from './arrays';
import { widthOf } from './exact-op';
import { largestHolding } from './largest';
import type { OpData } from './types';

export interface Anatomy {
  rows: {
    kind: 'none' | 'every' | 'one' | 'range' | 'from' | 'some';
    first: number;
    last: number;
    count: number;
    of: number;
    words: string;
  };
  /** The column groups of the heatmap and each one's share of the squared error. */
  groups: {
    axis: 'heads' | 'heads × q/k/v' | 'MLP width' | 'vocabulary' | 'columns';
    labels: string[];
    share: number[];
    words: string;
  };
  /** Shares of named parts (q / k / v, rotary / pass-through dims), where the op has them. */
  parts: { label: string; share: number }[];
  shape: {
    kind: 'bias-like' | 'scattered' | 'everywhere' | 'concentrated';
    elements: number;
    of: number;
    words: string;
  };
  /** The median error in ULPs of each format at the exact value. */
  size: Record<NumFormat, number> & { words: string };
  /** rows × groups: the RMS error of each cell over the op's floor (in absolute terms). */
  heatmap: { rowLabels: string[]; colLabels: string[]; values: number[] };
  sentence: string;
}

const MAX_ROWS = 48;
const MAX_COLS = 48;

const pct = (x: number) => `${Math.round(100 * x)} %`;

/** Column groups of the op's output: per head (and q/k/v), or equal stretches of a wide tensor. */
function groupsOf(
  d: OpData,
  width: number,
): { axis: Anatomy['groups']['axis']; of: (c: number) => number; labels: string[] } {
  const H = d.cfg.numHeads;
  const hd = d.cfg.headDim;
  if (d.op === 'qkv' && 3 * H <= MAX_COLS)
    return {
      axis: 'heads × q/k/v',
      of: (c) => Math.floor(c / hd),
      labels: Array.from({ length: 3 * H }, (_, g) => `h${Math.floor(g / 3)} ${'qkv'[g % 3]}`),
    };
  if ((d.op === 'attention' || d.op === 'attn_block' || d.op === 'qkv') && H <= MAX_COLS) {
    const per = width / H;
    return {
      axis: 'heads',
      of: (c) => Math.floor(c / per),
      labels: Array.from({ length: H }, (_, h) => `h${h}`),
    };
  }
  const bins = Math.min(16, width);
  const axis = d.op === 'fc1' || d.op === 'act' ? 'MLP width' : d.op === 'lm_head' ? 'vocabulary' : 'columns';
  const size = Math.ceil(width / bins);
  const n = Math.ceil(width / size);
  return {
    axis,
    of: (c) => Math.floor(c / size),
    labels: Array.from({ length: n }, (_, b) => `${b * size}–${Math.min(width, (b + 1) * size) - 1}`),
  };
}

function rowsWords(bad: number[], T: number): Anatomy['rows'] {
  const count = bad.length;
  const base = { count, of: T, first: bad[0] ?? -1, last: bad[count - 1] ?? -1 };
  if (count === 0) return { ...base, kind: 'none', words: 'no row stands out' };
  if (count === T) return { ...base, kind: 'every', words: 'every row' };
  if (count === 1) return { ...base, kind: 'one', words: `row ${bad[0]} only` };
  const contiguous = bad[count - 1] - bad[0] + 1 === count;
  if (contiguous && bad[count - 1] === T - 1)
    return { ...base, kind: 'from', words: `from row ${bad[0]} on` };
  if (contiguous) return { ...base, kind: 'range', words: `rows ${bad[0]}–${bad[count - 1]}` };
  return { ...base, kind: 'some', words: `${count} of ${T} rows (the first: row ${bad[0]})` };
}

/**
 * One row of the pass over the elements: each element's error (non-finite: 0) into `e`, its square into the row's
 * sum (returned), its column group's (sums[2 + group]), its heatmap cell's (cell, cellN from `cellAt`) and the
 * running total (sums[0]), the exact value's square into sums[1], the error into its column's sum (`mean`). A function
 * of its own, called once a row, so that the engine compiles it after a few rows (a loop over every element in one
 * long call runs unoptimised for most of it); the sums are taken in element order, as one loop over them would.
 */
export function sumRow(
  recorded: ArrayLike<number>,
  exact: ArrayLike<number>,
  at: number,
  w: number,
  groupOf: Int32Array,
  cellAt: number,
  e: Float64Array,
  cell: Float64Array,
  cellN: Float64Array,
  mean: Float64Array,
  sums: Float64Array,
): number {
  let total = sums[0];
  let exactSq = sums[1];
  let r = 0;
  for (let c = 0, i = at; c < w; c++, i++) {
    const x = recorded[i] - exact[i];
    const ei = Number.isFinite(x) ? x : 0;
    e[i] = ei;
    const sq = ei * ei;
    total += sq;
    exactSq += exact[i] * exact[i];
    r += sq;
    const j = groupOf[c];
    sums[2 + j] += sq;
    cell[cellAt + j] += sq;
    cellN[cellAt + j]++;
    mean[c] += ei;
  }
  sums[0] = total;
  sums[1] = exactSq;
  return r;
}

/**
 * The elements of one row ([at, at + w) of `e`) whose square reaches `threshold`, every `stride`-th of those met
 * (`seen` before this row; the count after it is returned), pushed onto `out`. Called once a row, as sumRow is.
 */
function carryingRow(
  e: Float64Array,
  at: number,
  w: number,
  threshold: number,
  stride: number,
  seen: number,
  out: number[],
): number {
  for (let i = at; i < at + w; i++)
    if (e[i] !== 0 && e[i] * e[i] >= threshold && seen++ % stride === 0) out.push(i);
  return seen;
}

/** The anatomy of the recorded output's error against the exact output. */
export function anatomy(d: OpData): Anatomy {
  const T = d.tokens.length;
  const w = widthOf(d);
  const n = T * w;
  // One pass over the elements: the error, its squares by row, by column group and heatmap cell, and its column
  // means (each sum in the order the separate passes summed it: the same numbers).
  const g = groupsOf(d, w);
  const G = g.labels.length;
  const rb = Math.min(T, MAX_ROWS);
  const rowBin = (t: number) => Math.floor((t * rb) / T);
  const cell = new Float64Array(rb * G);
  const cellN = new Float64Array(rb * G);
  const groupOf = Int32Array.from({ length: w }, (_, c) => g.of(c));
  const rowSq = new Float64Array(T);
  const mean = new Float64Array(w);
  const e = new Float64Array(n);
  const sums = new Float64Array(2 + G);
  for (let t = 0; t < T; t++)
    rowSq[t] = sumRow(d.recorded, d.exact, t * w, w, groupOf, rowBin(t) * G, e, cell, cellN, mean, sums);
  const total = sums[0];
  const exactSq = sums[1];
  const share = Array.from(sums.subarray(2));
  // The floor as an absolute RMS: the relative floor times the exact output's RMS.
  const floorRel = effectiveFloor(d.floor, 'relL2', d.precision, 0);
  const rms = Math.sqrt(exactSq / Math.max(1, n));
  const floorAbs = Math.max(floorRel * rms, Number.MIN_VALUE);

  // Rows: those whose RMS error passes k × the floor's (absolute: a small row is not held to a tighter bar).
  const bad: number[] = [];
  for (let t = 0; t < T; t++) if (Math.sqrt(rowSq[t] / w) > d.k * floorAbs) bad.push(t);
  const rows = rowsWords(bad, T);

  // Column groups and the heatmap (summed above).
  for (let j = 0; j < G; j++) share[j] = total > 0 ? share[j] / total : 0;
  const values = Array.from(cell, (x, i) => Math.sqrt(x / Math.max(1, cellN[i])) / floorAbs);
  const rowLabels = Array.from({ length: rb }, (_, b) => {
    const lo = Math.ceil((b * T) / rb);
    const hi = Math.ceil(((b + 1) * T) / rb) - 1;
    return lo === hi ? `${lo}` : `${lo}–${hi}`;
  });
  const order = share.map((s, j) => [s, j] as const).sort((a, b) => b[0] - a[0]);
  const top = order.filter(([s]) => s > Math.min(0.6, 2 / G));
  const groupsWords =
    total === 0
      ? 'nowhere'
      : top.length === 0
        ? `all ${g.axis === 'heads × q/k/v' ? 'heads' : g.axis} evenly`
        : `mostly ${top
            .slice(0, 3)
            .map(([s, j]) => `${g.labels[j]} (${pct(s)})`)
            .join(', ')}${top.length > 3 ? ` and ${top.length - 3} more` : ''}`;

  // Parts: q / k / v and rotary vs pass-through dims of the fused QKV.
  const parts: Anatomy['parts'] = [];
  if (d.op === 'qkv' && total > 0) {
    const hd = d.cfg.headDim;
    const r = d.cfg.rotaryNdims;
    const acc: Record<string, number> = {
      q: 0,
      k: 0,
      v: 0,
      'rotary dims (q, k)': 0,
      'pass-through dims (q, k)': 0,
    };
    for (let t = 0; t < T; t++)
      for (let c = 0; c < w; c++) {
        const x = e[t * w + c] ** 2;
        const which = 'qkv'[Math.floor(c / hd) % 3];
        acc[which] += x;
        if (which !== 'v' && r < hd) acc[c % hd < r ? 'rotary dims (q, k)' : 'pass-through dims (q, k)'] += x;
      }
    for (const [label, x] of Object.entries(acc))
      if (r < hd || !label.includes('dims')) parts.push({ label, share: x / total });
  }

  // Shape: bias-like (one vector in every row), a few scattered elements, or everywhere.
  for (let c = 0; c < w; c++) mean[c] /= T;
  let biasEnergy = 0;
  for (let c = 0; c < w; c++) biasEnergy += T * mean[c] * mean[c];
  // How many of the largest elements hold 90 % of the squared error, against the same count for the exact
  // values: an error proportional to the values (a rounding) is as spread as they are.
  const { count: n90, threshold } = largestHolding(e, 0.9);
  // (the values' count from an even sample of at most 65536 of them, scaled up)
  const every = Math.max(1, Math.ceil(n / 65536));
  const sample = new Float64Array(Math.ceil(n / every));
  for (let i = 0, j = 0; i < n; i += every) sample[j++] = d.exact[i];
  const n90Exact = largestHolding(sample, 0.9).count * every;
  let shape: Anatomy['shape'];
  if (T >= 2 && total > 0 && biasEnergy > 0.9 * total)
    shape = {
      kind: 'bias-like',
      elements: n90,
      of: n,
      words: 'the same error vector in every row (bias-like)',
    };
  else if (n90 <= Math.max(1, 0.01 * n))
    shape = {
      kind: 'scattered',
      elements: n90,
      of: n,
      words: `a few scattered elements (${n90} of ${n} hold 90 % of it)`,
    };
  else if (n90 >= 0.5 * n90Exact)
    shape = { kind: 'everywhere', elements: n90, of: n, words: 'spread over the whole tensor' };
  else
    shape = {
      kind: 'concentrated',
      elements: n90,
      of: n,
      words: `concentrated: ${n90} of ${n} elements hold 90 % of it`,
    };

  // Size: the median error, in units of each format's spacing at the exact value, over the elements that carry it
  // (the largest that hold 90 % of its square).
  // The elements that carry it: those at least as large as the n90-th largest (a sample of at most 4096: the median's words need no more).
  const carrying: number[] = [];
  const stride = Math.max(1, Math.floor(n90 / 4096));
  for (let t = 0, seen = 0; t < T; t++) seen = carryingRow(e, t * w, w, threshold, stride, seen, carrying);
  const sizes = {} as Record<NumFormat, number>;
  for (const f of FORMATS) {
    const u = new Float64Array(carrying.length);
    carrying.forEach((i, j) => {
      u[j] = Math.abs(e[i]) / ulpOf(f, d.exact[i]);
    });
    sizes[f] = u.length ? medianOf(u) : 0;
  }
  const fmt = (x: number) =>
    x >= 100 ? x.toExponential(1).replace('e+', 'e') : String(Number(x.toPrecision(2)));
  const sizeWords = `typically ${fmt(sizes.bf16)} bf16 ULP (${fmt(sizes.fp16)} fp16, ${fmt(sizes.tf32)} tf32, ${fmt(sizes.fp32)} fp32)`;

  const sentence =
    total === 0
      ? 'The recorded output equals the exact one.'
      : `The error is ${rows.kind === 'from' ? rows.words : rows.kind === 'none' ? 'in no row in particular' : `in ${rows.words}`}, ${groupsWords}, ${shape.words}; ${sizeWords}.`;
  return {
    rows,
    groups: { axis: g.axis, labels: g.labels, share, words: groupsWords },
    parts,
    shape,
    size: { ...sizes, words: sizeWords },
    heatmap: { rowLabels, colLabels: g.labels, values },
    sentence,
  };
}
