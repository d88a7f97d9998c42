// The search for a cause at one op: every cause of the op's kind offers variants (catalog/), each is re-run exactly
// from the run's recorded inputs (exact-op.ts) and scored by the residual between its output and the recorded
// output over the op's floor. A cause is named only when it brings the error within k × floor and no other cause
// explains clearly better; two that explain about equally are both named; none: "no known cause explains it".
// (A little past 400 lines: the samples, the scorer and the search's steps are one algorithm, read together.)

import { PRECISION_FORMATS } from '../../numeric/precision';
import type { NumFormat } from '../../numeric/round';
import { roundTo } from '../../numeric/round';
import { effectiveFloor, ratioOf } from '../floor';
import { fullMetrics } from '../metrics';
import { gather } from './arrays';
import { CAUSES } from './catalog';
import {
  evalVariant,
  innerOf,
  isOperandProduct,
  type ProductCache,
  readsOperands,
  widthOf,
  withRows,
} from './exact-op';
import { errorSpans, type RowSpan, spanWords } from './rows';
import {
  ATTENTION_OPS,
  type Candidate,
  type Cause,
  type CauseVerdict,
  type OpData,
  PRODUCT_OPS,
  type TestedCause,
  type Variant,
} from './types';

/**
 * What one variant may cost: multiply-adds of a re-run product, and output elements scored (a larger op is scored on
 * a sample of its columns, always over every row). Every candidate is screened on a small sample; the causes that
 * come near an explanation are scored again, on the larger one, in the report's metric.
 */
export interface Budget {
  mac: number;
  elements: number;
  /** Columns scored however costly (default 16). */
  minColumns?: number;
}
export const SCREEN: Budget = { mac: 2e6, elements: 1 << 14 };
export const FINAL: Budget = { mac: 24e6, elements: 1 << 20 };
/**
 * Candidates of a cause kept from screening — those about as good as its best, at most this many — and scored again
 * on the final sample when the cause comes near.
 */
const KEPT_PER_CAUSE = 8;
/** Causes re-scored on the final sample: those whose screened residual is within this many × k (at least 3). */
const FINALISTS_WITHIN = 20;
/** A named cause must beat every other by this factor (or by one floor, whichever is more) to be named alone. */
const CLEARLY = 2;

/** Each output column's squared error (recorded vs exact; a non-finite one counts as the largest), kept per op for
 * as long as its tensors are the same. */
const colErrs = new WeakMap<OpData, { recorded: Float32Array; exact: Float64Array; err: Float64Array }>();
function columnErrors(d: OpData): Float64Array {
  const held = colErrs.get(d);
  if (held && held.recorded === d.recorded && held.exact === d.exact) return held.err;
  const T = d.tokens.length;
  const width = widthOf(d);
  const err = new Float64Array(width);
  for (let t = 0; t < T; t++)
    for (let c = 0; c < width; c++) {
      const e = d.recorded[t * width + c] - d.exact[t * width + c];
      err[c] += Number.isFinite(e) ? e * e : Number.MAX_VALUE;
    }
  colErrs.set(d, { recorded: d.recorded, exact: d.exact, err });
  return err;
}

/** The output columns variants are scored on: all, or the worst columns and an even spread of the others. */
export function scoredColumns(d: OpData, budget: Budget = FINAL): Int32Array | null {
  const T = d.tokens.length;
  const width = widthOf(d);
  const K = d.inputs[0]?.length ? d.inputs[0].length / T : 0;
  // Multiply-adds per output column: a product's K per row; the attention core's scores and values; a fused QKV
  // and attention group's three QKV columns per row besides.
  const isProduct = PRODUCT_OPS.includes(d.op);
  const isAttention = ATTENTION_OPS.includes(d.op);
  const perCol = isAttention ? 2 * T * T + (isProduct ? 3 * T * K : 0) : isProduct ? T * K : 0;
  let most = Math.floor(budget.elements / T);
  if (perCol > 0) most = Math.min(most, Math.floor(budget.mac / perCol));
  if (width <= most) return null;
  most = Math.max(most, budget.minColumns ?? 16);
  const colErr = columnErrors(d);
  const unit = isAttention ? d.cfg.headDim : 1;
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
export function scorer(d: OpData, cols: Int32Array | null, fast = false, cache: ProductCache | null = null) {
  const T = d.tokens.length;
  const width = widthOf(d);
  const rec = gather(d.recorded, T, width, cols);
  // fp32 storage rounds nothing the variant's f32 arithmetic has not: only a narrower format is applied.
  const stored = PRECISION_FORMATS[d.precision]?.storage;
  const storage: NumFormat | null = stored && stored !== 'fp32' ? stored : null;
  // What a correct kernel of the variant may still differ by before its output is rounded: twice the fp32
  // reference kernel's largest error at this op, plus a few fp32 roundings of the value.
  const tolAbs = Number.isFinite(d.floor.maxAbs) ? 2 * d.floor.maxAbs : 0;
  return (v: Variant): number => {
    const out = evalVariant(d, v, cols, cache);
    const formats = [v.outFormat, storage].filter((f): f is NumFormat => !!f);
    if (formats.length > 0) {
      // A rounded output: the recorded value is right if it is the rounding of any value within the tolerance
      // (a value near a rounding boundary may land either side of it). The variant's format rounds its rows only.
      const R = (x: number) => formats.reduce((y, f) => roundTo(f, y), x);
      const n = out.length / T;
      const outside = (i: number) => !!v.rows && (i < v.rows.from * n || i >= v.rows.to * n);
      const Rs = (x: number) => (storage ? roundTo(storage, x) : x);
      for (let i = 0; i < out.length; i++) {
        const x = out[i];
        if (v.outFormat && outside(i)) {
          if (!storage) continue;
          const tol = tolAbs + 2 ** -22 * Math.abs(x);
          const [lo, hi] = [Rs(x - tol), Rs(x + tol)];
          const r = rec[i];
          out[i] = r < lo ? lo : r > hi ? hi : Number.isNaN(r) ? x : r;
          continue;
        }
        const tol = tolAbs + 2 ** -22 * Math.abs(x);
        const lo = R(x - tol);
        const hi = R(x + tol);
        const r = rec[i];
        out[i] = r < lo ? lo : r > hi ? hi : Number.isNaN(r) ? x : r;
      }
    }
    // Screening: relative L2 alone, over the relative floor (a sum of squares: no ULPs, no histogram).
    if (fast) {
      let num = 0;
      let den = 0;
      for (let i = 0; i < out.length; i++) {
        num += (rec[i] - out[i]) ** 2;
        den += out[i] * out[i];
      }
      const r = Math.sqrt(num / den) / effectiveFloor(d.floor, 'relL2', d.precision, 0);
      return Number.isNaN(r) ? Number.POSITIVE_INFINITY : r;
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

/**
 * The cause's candidates on the rows `span` only: its search run again with the residual of its variants there (a
 * parameter found for those rows), each candidate's variant applied on them and the exact op elsewhere. A candidate
 * that stands for the same parameters as one over every row shares its variant (a product is computed once).
 */
function onRows(
  d: OpData,
  cause: Cause,
  span: RowSpan,
  residual: (v: Variant) => number,
  whole: Candidate[],
): Candidate[] {
  const same = new Map(whole.map((c) => [JSON.stringify(c.params), c.variant]));
  return cause.candidates({ data: d, residual: (v) => residual(withRows(v, span)), rows: span }).map((c) => ({
    params: { ...c.params, rowsFrom: span.from, rowsTo: span.to },
    variant: withRows(same.get(JSON.stringify(c.params)) ?? c.variant, span),
  }));
}

/** A cause's words, and the rows it was found on when they are not all. */
function wordsOfCause(cause: Cause, params: Candidate['params'], d: OpData): string {
  const w = cause.words(params, d);
  if (params.rowsFrom === undefined) return w;
  return `${w}, ${spanWords({ from: Number(params.rowsFrom), to: Number(params.rowsTo) }, d)}`;
}

/** The operand products of `candidates` not yet asked for (as their variants without rows: what is multiplied). */
function productsOf(
  d: OpData,
  candidates: Candidate[],
  cols: Int32Array | null,
  asked: Set<Variant>,
): ProductRequest[] {
  const out: ProductRequest[] = [];
  for (const c of candidates) {
    const v = innerOf(c.variant);
    if (asked.has(v) || !isOperandProduct(d, v)) continue;
    asked.add(v);
    out.push({ v, cols });
  }
  return out;
}

/** Variants whose outputs a search asks for before it scores them (the products the GPU oracle can run). */
export interface ProductRequest {
  v: Variant;
  cols: Int32Array | null;
}

/** Searches the causes of the op's kind and names the ones that explain its error (every product in fp64 here). */
export function explain(d: OpData, causes: readonly Cause[] = CAUSES): CauseVerdict {
  const steps = search(d, causes, null);
  let r = steps.next();
  while (!r.done) r = steps.next();
  return r.value;
}

/**
 * The same search, with the products it asks for computed by `run` before they are scored (the GPU oracle's
 * double-float product: compare/why-gpu.ts); what `run` leaves out is computed here. The search goes on while `run`
 * works — it screens the candidates that read no product operand their own way — and waits for it only where it
 * scores one that does (WAIT): the GPU multiplies while the CPU screens, and the numbers are those of a search that
 * waited at once (no candidate scored early reads anything `run` fills).
 */
export async function explainWith(
  d: OpData,
  cache: ProductCache,
  run: (requests: ProductRequest[]) => Promise<void>,
  causes: readonly Cause[] = CAUSES,
): Promise<CauseVerdict> {
  const steps = search(d, causes, cache);
  let pending: Promise<void> | null = null;
  const settle = async () => {
    const p = pending;
    pending = null;
    if (p) await p;
  };
  let r = steps.next();
  while (!r.done) {
    // (no await where nothing is pending: the caller gets control back only once the GPU has its work)
    if (r.value === WAIT) {
      if (pending) await settle();
    } else if (r.value.length > 0) {
      if (pending) await settle();
      pending = run(r.value);
      pending.catch(() => undefined); // (awaited at the next WAIT)
    }
    r = steps.next();
  }
  if (pending) await settle();
  return r.value;
}

/** What the search yields where it goes on only once the products it asked for are in. */
const WAIT: ProductRequest[] = [];

/**
 * The search, in steps: before the candidates are screened, and before the near ones are scored again, it yields
 * the operand products it is about to score, so that a caller may fill `cache` with them first; it yields WAIT
 * before it scores one of them (the candidates that read none are screened before that, while they are computed).
 */
function* search(
  d: OpData,
  causes: readonly Cause[],
  cache: ProductCache | null,
): Generator<ProductRequest[], CauseVerdict, void> {
  const t0 = performance.now();
  const cols = scoredColumns(d);
  const residual = scorer(d, cols, false, cache);
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
  // Screen every candidate of every cause on the small sample (searches too), then score each near cause's best
  // candidate on the final sample in the report's metric.
  const screenCols = scoredColumns(d, SCREEN);
  const screens = new Map<number, { cols: Int32Array | null; f: (v: Variant) => number }>([
    [1, { cols: screenCols, f: scorer(d, screenCols, true, cache) }],
  ]);
  const screenFor = (share = 1) => {
    let sc = screens.get(share);
    if (!sc) {
      const budget = { mac: SCREEN.mac * share, elements: SCREEN.elements * share, minColumns: 2 };
      const c = scoredColumns(d, budget);
      sc = { cols: c, f: scorer(d, c, true, cache) };
      screens.set(share, sc);
    }
    return sc;
  };
  // Each cause is scored over every row and, where the error lives in some rows only (a decode step on, a tile on,
  // one position), on those rows: its variant there, the exact op elsewhere.
  const spans = errorSpans(d);
  const listed = causes
    .filter((cause) => cause.ops.includes(d.op))
    .map((cause) => {
      const sc = screenFor(cause.screenShare);
      const candidates = cause.candidates({ data: d, residual: sc.f });
      if (cause.rows !== 'whole')
        for (const span of spans) candidates.push(...onRows(d, cause, span, sc.f, candidates));
      return { cause, sc, candidates };
    });
  const asked = new Set<Variant>();
  const finalAsked = new Set<Variant>();
  // (the final sample's products asked with the screening's: on the GPU they cost little more and are computed while
  // the CPU screens, so the finalists need no second round trip)
  yield listed.flatMap(({ sc, candidates }) => [
    ...productsOf(d, candidates, sc.cols, asked),
    ...(sc.cols === cols ? [] : productsOf(d, candidates, cols, finalAsked)),
  ]);
  // Each cause keeps its few best screened candidates: a small sample may not tell close variants apart (two K
  // partitions of an fp16 accumulator agree on most elements), the final one does.
  // (the candidates that read no product operand their own way first: their scores need nothing asked for above)
  const early = new Map<Candidate, number>();
  for (const { sc, candidates } of listed)
    for (const c of candidates) if (!readsOperands(innerOf(c.variant))) early.set(c, sc.f(c.variant));
  yield WAIT;
  const screened: { cause: Cause; best: { c: Candidate; score: number }[]; score: number }[] = [];
  for (const { cause, sc, candidates } of listed) {
    const scored = candidates.map((c) => ({ c, score: early.get(c) ?? sc.f(c.variant) }));
    if (scored.length === 0) continue;
    scored.sort((x, y) => x.score - y.score);
    const near = scored.filter((x) => x.score <= 2 * scored[0].score + 1);
    const best = near.length > 1 ? near.slice(0, KEPT_PER_CAUSE) : scored.slice(0, 1);
    screened.push({ cause, best, score: best[0].score });
  }
  screened.sort((a, b) => a.score - b.score);
  const cut = Math.max(FINALISTS_WITHIN * d.k, screened[Math.min(2, screened.length - 1)]?.score ?? 0);
  yield screened
    .filter((x) => x.score <= cut)
    .flatMap((x) =>
      productsOf(
        d,
        x.best.map((b) => b.c),
        cols,
        finalAsked,
      ),
    );
  yield WAIT;
  const tested: TestedCause[] = screened.map(({ cause, best, score }) => {
    let top = { c: best[0].c, residual: score };
    if (score <= cut)
      for (const [i, b] of best.entries()) {
        const r = residual(b.c.variant);
        // (a tie within the exact op's own error, ~1e-9, goes to the candidate over every row: the same arithmetic
        // on some rows only — a rotation at position 0 — is no finding, and fp64 and double-float must agree)
        const tie = Math.abs(r - top.residual) <= 1e-9 * top.residual;
        const whole = b.c.params.rowsFrom === undefined && top.c.params.rowsFrom !== undefined;
        if (i === 0 || (tie ? whole : r < top.residual)) top = { c: b.c, residual: r };
      }
    return {
      id: cause.id,
      family: cause.family,
      words: wordsOfCause(cause, top.c.params, d),
      params: top.c.params,
      residual: top.residual,
    };
  });
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
    sampled: screenCols
      ? { screened: screenCols.length, scored: cols ? cols.length : widthOf(d), of: widthOf(d) }
      : null,
    ms: performance.now() - t0,
  };
}
