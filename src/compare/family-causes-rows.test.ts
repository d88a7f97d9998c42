// The family's causes scored on the rows where the error lives (family-causes-rows.ts): the rows picked are the ones
// with the largest error, and screening on them names what scoring every candidate on every row names — a candidate
// that reproduces the error on its rows leaves none of it there, so it is always a finalist and gets its whole-op
// residual; a candidate left out has an estimate past 2k, so it could never have been named. 60 seeds: the op's rows
// and width, the rows the fault touches, the candidates' kinds.
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../numeric/random';
import type { OpStep } from '../ops/types';
import { verdictOf } from './family-causes';
import { errorRows, pickRows, SAMPLE_ROWS, scoreOnRowsNow } from './family-causes-rows';
import type { Candidate } from './family-causes-types';

const K = 10;
const ROW_WISE: OpStep[] = [{ slot: 'ln2', op: 'rmsnorm', inputs: ['ln2_in'], width: 'hidden' } as OpStep];
const ATTENTION: OpStep[] = [{ slot: 'ctx', op: 'attention', inputs: ['q', 'k', 'v'], width: 'q' } as OpStep];

describe('family causes on rows', () => {
  it('errorRows: the n rows of largest squared error, ascending; pickRows takes them in order', () => {
    const exact = Float64Array.from({ length: 5 * 3 }, (_, i) => i);
    const rec = Float64Array.from(exact);
    rec[1 * 3 + 2] += 5; // row 1: 25
    rec[3 * 3 + 0] += 2; // row 3: 4
    rec[4 * 3 + 1] += Number.NaN; // row 4: not finite, first
    expect(errorRows(rec, exact, 5, 2)).toEqual([1, 4]);
    expect(errorRows(rec, exact, 5, 3)).toEqual([1, 3, 4]);
    expect([...pickRows(exact, 5, [3, 0])]).toEqual([9, 10, 11, 0, 1, 2]);
  });

  it('screening on the error rows names what scoring every candidate whole names (60 seeds)', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const r = mulberry32(seed * 65537);
      const T = SAMPLE_ROWS + 1 + Math.floor(r() * 60);
      const width = 5 + Math.floor(r() * 40);
      const n = T * width;
      const exact = Float64Array.from({ length: n }, () => r() * 2 - 1);
      // A correct kernel's noise, and the fault: a few rows scaled by 1 + s.
      const noise = Float64Array.from({ length: n }, () => (r() * 2 - 1) * 1e-7);
      const hit = [...new Set(Array.from({ length: 1 + Math.floor(r() * 4) }, () => Math.floor(r() * T)))];
      const s = 10 ** (-4 + r() * 2);
      const scaled = (
        v: Float64Array,
        rows: readonly number[],
        by: number,
        all: readonly number[] | null,
      ) => {
        const out = Float64Array.from(v);
        rows.forEach((t) => {
          const at = all ? all.indexOf(t) : t;
          if (at >= 0) for (let j = 0; j < width; j++) out[at * width + j] *= 1 + by;
        });
        return out;
      };
      const recorded = scaled(exact, hit, s, null).map((x, i) => x + noise[i]);
      const other = [...new Set(Array.from({ length: 3 }, () => Math.floor(r() * T)))].filter(
        (t) => !hit.includes(t),
      );
      const cands: { cand: Candidate; out: (rows: readonly number[] | null) => Float64Array }[] = [
        {
          id: 'good',
          f: (rows: readonly number[] | null) =>
            scaled(rows ? pickRows(exact, T, rows) : exact, hit, s, rows),
        },
        {
          id: 'half',
          f: (rows: readonly number[] | null) =>
            scaled(rows ? pickRows(exact, T, rows) : exact, hit, s / 2, rows),
        },
        {
          id: 'elsewhere',
          f: (rows: readonly number[] | null) =>
            scaled(rows ? pickRows(exact, T, rows) : exact, other, s, rows),
        },
        { id: 'nothing', f: (rows: readonly number[] | null) => (rows ? pickRows(exact, T, rows) : exact) },
      ].map(({ id, f }) => ({
        cand: { id, family: 'function', words: id, params: {}, applies: () => true } as Candidate,
        out: f,
      }));
      const floor = Math.sqrt(noise.reduce((a, x) => a + x * x, 0));
      const residual = (out: Float64Array) => {
        let e = 0;
        for (let i = 0; i < n; i++) e += (recorded[i] - out[i]) ** 2;
        return Math.sqrt(e) / floor;
      };
      const ratio = residual(exact);
      const byId = new Map(cands.map((c) => [c.cand.id, c]));
      const score = (steps: OpStep[]) =>
        scoreOnRowsNow(
          cands.map((c) => c.cand),
          {
            T,
            steps,
            recorded,
            exact,
            compute: (cand, rows) => byId.get(cand.id)!.out(rows),
            residual,
            ratio,
            k: K,
          },
        );
      const screened = score(ROW_WISE);
      const whole = score(ATTENTION); // a group that reads other rows: every candidate whole
      const where = `seed ${seed}: T ${T}, width ${width}, rows ${hit.join(',')}, s ${s.toExponential(2)}`;
      expect(screened.sampled, where).toEqual({ screened: SAMPLE_ROWS, scored: T, of: T });
      expect(whole.sampled, where).toBeNull();
      const named = (t: typeof screened) =>
        verdictOf(t.tested, ratio, K, 0).named.map((x) => [x.id, x.residual]);
      expect(named(screened), where).toEqual(named(whole));
      for (const t of screened.tested) {
        const w = whole.tested.find((x) => x.id === t.id)!;
        // A cause scored whole has its whole residual; one left out was estimated past 2k, and is past k whole.
        if (t.residual !== w.residual) {
          expect(t.residual, `${where}: ${t.id}`).toBeGreaterThan(2 * K);
          expect(w.residual, `${where}: ${t.id}`).toBeGreaterThan(K);
        }
      }
    }
  });
});
