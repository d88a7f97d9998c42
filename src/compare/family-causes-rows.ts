// The family's causes scored on the rows where the error lives (docs/CAUSES.md, "Llama family"): for a group whose
// every step is row-wise (a norm, a projection, the SwiGLU, a residual add, the LM head — no rotary or attention,
// which read other positions), each candidate is first computed on the SAMPLE_ROWS rows with the largest error only
// (the run's recorded output against the exact re-run), and scored there by the fraction of the error it leaves;
// the finalists — every candidate whose estimated residual (that fraction × the op's ratio to its floor) is within
// 2k, and the best FINALISTS causes whatever they score — are computed on every row and get their residual over the
// floor as before. A candidate left out is reported with its estimate (never named: a name needs a residual ≤ k).
// A group that reads other rows, or a run of no more rows than the sample, is scored whole.
// A cause with a parameter the data can pin (Candidate.tune: an RMSNorm's eps, the rope theta) has it solved around
// the grid's best value — on the sampled rows, or on every row where the group is scored whole — and the value found
// named where it explains the error clearly better than the grid, with the range of values the run allows (those
// that leave no more than one floor more error: the run's own rounding moves the value solved).
import { OPS } from '../ops/descriptors';
import type { OpStep } from '../ops/types';
import type { CauseVerdict, TestedCause } from './causes/types';
import type { Candidate } from './family-causes-types';
import { keepBest } from './family-group';

/** Rows a row-wise group's candidates are screened on. */
export const SAMPLE_ROWS = 8;
/** Causes computed whole whatever their screened score (the best ones). */
const FINALISTS = 4;

export interface RowScoring {
  /** Rows of the op's output (tokens). */
  T: number;
  steps: readonly OpStep[];
  /** The run's recorded output and the exact re-run of the group, [T, width]. */
  recorded: ArrayLike<number>;
  exact: ArrayLike<number>;
  /** The group the candidate's way on the given rows (their outputs [rows, width] in that order); null: every row. */
  compute(cand: Candidate, rows: readonly number[] | null): Float64Array;
  /** A whole-op output's residual over the op's floor (Infinity where it is not finite). */
  residual(out: Float64Array): number;
  /** The op's error over its floor (the born op's ratio), and k. */
  ratio: number;
  k: number;
  /** Awaited between candidates (a cancel comes through; scoreOnRows only). */
  yieldNow?: () => Promise<void>;
}

/** Whether no step of the group reads another row than its own. */
export function rowWise(steps: readonly OpStep[]): boolean {
  return steps.every((s) => !OPS[s.op].wholeSequence);
}

/** The `n` rows of [T, width] `recorded` farthest from `exact` (squared L2 per row), ascending. */
export function errorRows(
  recorded: ArrayLike<number>,
  exact: ArrayLike<number>,
  T: number,
  n: number,
): number[] {
  const width = recorded.length / T;
  const err = Array.from({ length: T }, (_, t) => {
    let s = 0;
    for (let j = t * width; j < (t + 1) * width; j++) {
      const e = recorded[j] - exact[j];
      s += Number.isFinite(e) ? e * e : Number.POSITIVE_INFINITY;
    }
    return s;
  });
  return Array.from({ length: T }, (_, t) => t)
    .sort((a, b) => err[b] - err[a] || a - b)
    .slice(0, n)
    .sort((a, b) => a - b);
}

/** Rows `rows` of [T, width] `v`, in that order. */
export function pickRows(v: ArrayLike<number>, T: number, rows: readonly number[]): Float64Array {
  const width = v.length / T;
  const out = new Float64Array(rows.length * width);
  rows.forEach((t, r) => {
    for (let j = 0; j < width; j++) out[r * width + j] = v[t * width + j];
  });
  return out;
}

/** The same as pickRows into an f32 array (a recorded slot's rows). */
export function pickRowsF32(v: Float32Array, T: number, rows: readonly number[]): Float32Array {
  return Float32Array.from(pickRows(v, T, rows));
}

type Scored = { tested: TestedCause[]; sampled: CauseVerdict['sampled'] };

/**
 * Every candidate's best residual by cause, and what was sampled (the rows screened, and the rows the finalists were
 * scored on, of the op's rows; null where every candidate was scored whole). Awaits `yieldNow` between candidates.
 */
export async function scoreOnRows(cands: readonly Candidate[], s: RowScoring): Promise<Scored> {
  const it = scoring(cands, s);
  for (let r = it.next(); ; r = it.next()) {
    if (r.done) return r.value;
    await s.yieldNow?.();
  }
}

/** scoreOnRows on this thread without a break (the two-path why's, on a layer of a small model). */
export function scoreOnRowsNow(cands: readonly Candidate[], s: RowScoring): Scored {
  const it = scoring(cands, s);
  for (let r = it.next(); ; r = it.next()) if (r.done) return r.value;
}

/** The scoring, a step a candidate (the generator yields between them). */
function* scoring(cands: readonly Candidate[], s: RowScoring): Generator<void, Scored> {
  const best = new Map<string, TestedCause>();
  const whole = (cand: Candidate) => {
    const r = residualOf(s, cand);
    keepBest(best, cand, r);
    return r;
  };
  if (!rowWise(s.steps) || s.T <= SAMPLE_ROWS) {
    const r = new Map<Candidate, number>();
    for (const cand of cands) {
      r.set(cand, whole(cand));
      yield;
    }
    // A tunable parameter (a rope theta) solved on every row around the grid's best value of each of the best causes.
    const ranked = [...best.values()].sort((a, b) => a.residual - b.residual).slice(0, FINALISTS);
    for (const { id } of ranked) {
      const grid = cands.filter((c) => c.id === id && c.tune);
      if (grid.length === 0) continue;
      const g = grid.reduce((a, b) => (r.get(b)! < r.get(a)! ? b : a));
      yield* tuned(g, (c) => residualOf(s, c), s, best);
    }
    return { tested: [...best.values()], sampled: null };
  }
  const rows = errorRows(s.recorded, s.exact, s.T, SAMPLE_ROWS);
  const rec = pickRows(s.recorded, s.T, rows);
  const ex = pickRows(s.exact, s.T, rows);
  let base = 0;
  for (let j = 0; j < rec.length; j++) base += (rec[j] - ex[j]) ** 2;
  /** The fraction of the error on the sampled rows a candidate leaves. */
  const fracOf = (cand: Candidate) => {
    try {
      const out = spreadOut(s, cand, rows, rec);
      let left = 0;
      for (let j = 0; j < rec.length; j++) left += (rec[j] - out[j]) ** 2;
      return Number.isFinite(left)
        ? Math.sqrt(left / Math.max(base, Number.MIN_VALUE))
        : Number.POSITIVE_INFINITY;
    } catch {
      return Number.POSITIVE_INFINITY;
    }
  };
  const screened: { cand: Candidate; estimate: number }[] = [];
  for (const cand of cands) {
    screened.push({ cand, estimate: fracOf(cand) * s.ratio });
    yield;
  }
  // The best FINALISTS causes (by their best candidate), and every candidate whose estimate is within 2k.
  const byCause = new Map<string, number>();
  for (const x of screened)
    byCause.set(x.cand.id, Math.min(byCause.get(x.cand.id) ?? Number.POSITIVE_INFINITY, x.estimate));
  const top = new Set(
    [...byCause]
      .sort((a, b) => a[1] - b[1])
      .slice(0, FINALISTS)
      .map(([id]) => id),
  );
  for (const x of screened) {
    if (x.estimate <= 2 * s.k || (top.has(x.cand.id) && x.estimate === byCause.get(x.cand.id))) {
      whole(x.cand);
      yield;
    }
  }
  // A tunable parameter (an eps) solved on the sampled rows around the grid's best value of each finalist cause.
  for (const id of top) {
    const grid = screened.filter((x) => x.cand.id === id && x.cand.tune);
    if (grid.length === 0) continue;
    const g = grid.reduce((a, b) => (b.estimate < a.estimate ? b : a)).cand;
    yield* tuned(g, (c) => fracOf(c) * s.ratio, s, best);
  }
  for (const x of screened) if (!best.has(x.cand.id)) keepBest(best, x.cand, x.estimate);
  return { tested: [...best.values()], sampled: { screened: rows.length, scored: s.T, of: s.T } };
}

/**
 * The candidate's output on `rows`; with an orderSpread, each element where the form and its low and high ends
 * differ is `recorded` (the run's values on those rows) held to their range: a half rounding the order of an fp32 sum
 * decides is explained either way.
 */
function spreadOut(
  s: RowScoring,
  cand: Candidate,
  rows: readonly number[] | null,
  recorded: ArrayLike<number>,
): Float64Array {
  const out = s.compute(cand, rows);
  if (!cand.orderSpread) return out;
  const lo = s.compute({ ...cand, form: cand.orderSpread[0] }, rows);
  const hi = s.compute({ ...cand, form: cand.orderSpread[1] }, rows);
  for (let j = 0; j < out.length; j++) {
    const a = Math.min(lo[j], hi[j], out[j]);
    const b = Math.max(lo[j], hi[j], out[j]);
    if (a < b) out[j] = Math.min(b, Math.max(a, recorded[j]));
  }
  return out;
}

/** A candidate's residual over the floor on every row (Infinity where its form refuses the model). */
function residualOf(s: RowScoring, cand: Candidate): number {
  try {
    return s.residual(spreadOut(s, cand, null, s.recorded));
  } catch {
    // A variant the op's form refuses for this model (a window of 0) explains nothing.
    return Number.POSITIVE_INFINITY;
  }
}

/**
 * The tunable parameter of `g` (Candidate.tune) solved by a golden-section search of its logarithm within a factor of
 * 10 either side of the grid's value, minimising `objective`; the value found is kept (in `best`) where its residual on
 * every row is under half the cause's best so far: a value on the grid stays as the grid names it. It is named with
 * the range the run allows (tunedRange): the run's own fp32 rounding moves the value solved (an RMSNorm's mean of
 * squares, rounded in fp32, shifts a row exactly as an eps does: ±0.25 % at eps 3.7e-5 in fp32), so it is no more
 * precise than that range. `objective` is in units of the op's floor.
 */
function* tuned(
  g: Candidate,
  objective: (c: Candidate) => number,
  s: RowScoring,
  best: Map<string, TestedCause>,
): Generator<void, void> {
  const tune = g.tune!;
  const at = (u: number) => objective(tune.make(Math.exp(u)));
  const u0 = Math.log(tune.value);
  const u = yield* golden(at, u0 - Math.LN10, u0 + Math.LN10, 40);
  const solved = tune.make(Math.exp(u));
  const r = residualOf(s, solved);
  if (r < 0.5 * (best.get(g.id)?.residual ?? Number.POSITIVE_INFINITY))
    keepBest(best, withRange(solved, tune.key, yield* tunedRange(at, u, at(u))), r);
  yield;
}

/** The minimum of `f` on [lo, hi] by golden-section search, `n` steps (a yield after each). */
function* golden(f: (u: number) => number, lo: number, hi: number, n: number): Generator<void, number> {
  const phi = (Math.sqrt(5) - 1) / 2;
  let u1 = hi - phi * (hi - lo);
  let u2 = lo + phi * (hi - lo);
  let f1 = f(u1);
  let f2 = f(u2);
  for (let i = 0; i < n; i++) {
    if (f1 <= f2) {
      hi = u2;
      u2 = u1;
      f2 = f1;
      u1 = hi - phi * (hi - lo);
      f1 = f(u1);
    } else {
      lo = u1;
      u1 = u2;
      f1 = f2;
      u2 = lo + phi * (hi - lo);
      f2 = f(u2);
    }
    yield;
  }
  return (lo + hi) / 2;
}

/**
 * The range of the tuned parameter the run allows, [low, high]: the values whose objective (a residual over the op's
 * floor) stays within √(f² + 1) of the value solved's f — those that add no more than the floor itself (a correct
 * kernel's rounding) to the error left, so that the run's own rounding could have made either. Each end found by
 * stepping out ×4 from 1e-4 (in the log) until past the bar, then halving between 10 times.
 */
function* tunedRange(at: (u: number) => number, u: number, f: number): Generator<void, [number, number]> {
  const bar = Math.hypot(f, 1);
  const ends: number[] = [];
  for (const dir of [-1, 1]) {
    let inside = 0;
    let outside = Number.NaN;
    for (let step = 1e-4; step <= Math.LN10; step *= 4) {
      const g = at(u + dir * step);
      yield;
      if (!(g <= bar)) {
        outside = step;
        break;
      }
      inside = step;
    }
    if (!Number.isNaN(outside))
      for (let n = 0; n < 10; n++) {
        const mid = (inside + outside) / 2;
        const g = at(u + dir * mid);
        yield;
        if (g <= bar) inside = mid;
        else outside = mid;
      }
    ends.push(u + dir * inside);
  }
  return [Math.exp(ends[0]), Math.exp(ends[1])];
}

/** A solved candidate named with the range of its parameter the run allows: in its params and its words. */
function withRange(c: Candidate, key: string, [low, high]: [number, number]): Candidate {
  // three significant digits, rounded outward
  const out = (x: number, dir: -1 | 1) => {
    const step = 10 ** (Math.floor(Math.log10(x)) - 2);
    return Number(((dir < 0 ? Math.floor(x / step) : Math.ceil(x / step)) * step).toPrecision(3));
  };
  const [lo, hi] = [out(low, -1), out(high, 1)];
  return {
    ...c,
    params: { ...c.params, [`${key}Low`]: lo, [`${key}High`]: hi },
    words: `${c.words}; any ${key} from ${lo} to ${hi} fits the run as well (within its floor)`,
  };
}
