// The search for a cause at one op: every cause of the op's kind offers variants (catalog/), each is re-run exactly
// from the run's recorded inputs (exact-op.ts) and scored by the residual between its output and the recorded
// output over the op's floor. A cause is named only when it brings the error within k × floor and no other cause
// explains clearly better; two that explain about equally are both named; none: "no known cause explains it".

import type { NumFormat } from '../../numeric/round';
import { roundTo } from '../../numeric/round';
import { ratioOf } from '../floor';
import { fullMetrics } from '../metrics';
import { CAUSES } from './catalog';
import { evalVariant, gather, widthOf } from './exact-op';
import type { Cause, CauseVerdict, OpData, SearchContext, TestedCause, Variant } from './types';

/** Most multiply-adds one variant of a product may cost (a larger op is scored on a sample of its columns). */
const MAC_BUDGET = 24e6;
/** Most output elements one variant is scored on. */
const ELEMENT_BUDGET = 1 << 20;
/** A named cause must beat every other by this factor (or by one floor, whichever is more) to be named alone. */
const CLEARLY = 2;

const STORAGE: Record<string, NumFormat | null> = { fp32: null, bf16: 'bf16', fp16: 'fp16', fp16acc: 'fp16' };

/** The output columns variants are scored on: all, or the worst columns and an even spread of the others. */
export function scoredColumns(d: OpData): Int32Array | null {
  const T = d.tokens.length;
  const width = widthOf(d);
  const K = d.inputs[0]?.length ? d.inputs[0].length / T : 0;
  const isProduct = ['qkv', 'dense', 'fc1', 'fc2', 'lm_head'].includes(d.op);
  const perCol = d.op === 'attention' ? 2 * T * T : isProduct ? T * K : 0;
  let most = Math.floor(ELEMENT_BUDGET / T);
  if (perCol > 0) most = Math.min(most, Math.floor(MAC_BUDGET / perCol));
  if (width <= most) return null;
  most = Math.max(most, 16);
  const colErr = new Float64Array(width);
  for (let t = 0; t < T; t++)
    for (let c = 0; c < width; c++) {
      const e = d.recorded[t * width + c] - d.exact[t * width + c];
      colErr[c] += Number.isFinite(e) ? e * e : Number.MAX_VALUE;
    }
  const unit = d.op === 'attention' ? d.cfg.headDim : 1;
  const units = width / unit;
  const take = Math.max(1, Math.floor(most / unit));
  const unitErr = Array.from({ length: units }, (_, u) => {
    let s = 0;
    for (let c = u * unit; c < (u + 1) * unit; c++) s += colErr[c];
    return s;
  });
  const picked = new Set(
    unitErr
      .map((e, u) => [e, u] as const)
      .sort((a, b) => b[0] - a[0])
      .slice(0, Math.ceil(take / 2))
      .map(([, u]) => u),
  );
  for (let i = 0; picked.size < take && i < units; i++) picked.add(Math.floor((i * units) / take) % units);
  const cols: number[] = [];
  for (const u of [...picked].sort((a, b) => a - b))
    for (let c = u * unit; c < (u + 1) * unit; c++) cols.push(c);
  return Int32Array.from(cols);
}

/** The scorer of one op: the residual of any variant, over the op's floor, on the scored columns. */
export function scorer(d: OpData, cols: Int32Array | null) {
  const T = d.tokens.length;
  const width = widthOf(d);
  const rec = gather(d.recorded, T, width, cols);
  const storage = STORAGE[d.precision];
  // What a correct kernel of the variant may still differ by before its output is rounded: twice the fp32
  // reference kernel's largest error at this op, plus a few fp32 roundings of the value.
  const tolAbs = Number.isFinite(d.floor.maxAbs) ? 2 * d.floor.maxAbs : 0;
  return (v: Variant): number => {
    const out = evalVariant(d, v, cols);
    const formats = [v.outFormat, storage].filter((f): f is NumFormat => !!f);
    if (formats.length > 0) {
      // A rounded output: the recorded value is right if it is the rounding of any value within the tolerance
      // (a value near a rounding boundary may land either side of it).
      const R = (x: number) => formats.reduce((y, f) => roundTo(f, y), x);
      for (let i = 0; i < out.length; i++) {
        const x = out[i];
        const tol = tolAbs + 2 ** -22 * Math.abs(x);
        const lo = R(x - tol);
        const hi = R(x + tol);
        const r = rec[i];
        out[i] = r < lo ? lo : r > hi ? hi : Number.isNaN(r) ? x : r;
      }
    }
    const m = fullMetrics(rec, out, d.precision);
    const r = ratioOf(m, d.floor, d.metric, d.precision, d.scale);
    return Number.isNaN(r) ? Number.POSITIVE_INFINITY : r;
  };
}

const times = (r: number) => (r < 0.1 ? '< 0.1×' : `${r.toPrecision(2)}×`);

/** The verdict's words from the named causes. */
function wordsOf(named: TestedCause[], best: TestedCause | null, error: number): string {
  if (named.length === 0) {
    const closest =
      best && Number.isFinite(best.residual)
        ? ` (closest: ${best.words} [${best.id}], leaving ${times(best.residual)} its floor of the ${times(error)})`
        : '';
    return `no known cause explains it${closest}`;
  }
  const each = named.map((c) => `${c.words} [${c.id}] — explains all but ${times(c.residual)} floor`);
  return each.length === 1 ? each[0] : `${each.join('; or ')} (equally)`;
}

/** Searches the causes of the op's kind and names the ones that explain its error. */
export function explain(d: OpData, causes: readonly Cause[] = CAUSES): CauseVerdict {
  const t0 = performance.now();
  const cols = scoredColumns(d);
  const residual = scorer(d, cols);
  const error = residual({});
  if (!(error > d.k)) {
    // Within its floor: nothing to explain, and nothing is searched.
    return {
      named: [],
      runnerUp: null,
      error,
      words: 'the op agrees with the exact result: nothing to explain',
      tested: [],
      sampled: null,
      ms: performance.now() - t0,
    };
  }
  const s: SearchContext = { data: d, residual };
  const tested: TestedCause[] = [];
  for (const cause of causes) {
    if (!cause.ops.includes(d.op)) continue;
    let best: TestedCause | null = null;
    for (const c of cause.candidates(s)) {
      const r = residual(c.variant);
      if (best === null || r < best.residual)
        best = { id: cause.id, family: cause.family, words: '', params: c.params, residual: r };
    }
    if (best) tested.push({ ...best, words: cause.words(best.params, d) });
  }
  tested.sort((a, b) => a.residual - b.residual);
  const best = tested[0] ?? null;
  const within = tested.filter((c) => c.residual <= d.k);
  const bar = best ? Math.max(CLEARLY * best.residual, best.residual + 1) : 0;
  const named = within.filter((c) => c.residual <= bar);
  const runnerUp = tested.find((c) => !named.includes(c)) ?? null;
  return {
    named,
    runnerUp,
    error,
    words: wordsOf(named, best, error),
    tested,
    sampled: cols ? { columns: cols.length, of: widthOf(d) } : null,
    ms: performance.now() - t0,
  };
}
