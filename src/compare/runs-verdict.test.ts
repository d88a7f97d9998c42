// Where two generations' texts part (partingOfRuns): the exact gap between the two choices against the logits' floor
// — a near tie within k × the floor (benign), else the run that chose against the exact forward named; the margins
// from each run's own logits. Random logits rows over fresh seeds (KERNEL_SEED fixes one; the seed is in each message).
import { describe, expect, it } from 'vitest';
import { freshSeed } from '../kernels/testing';
import { mulberry32, randn } from '../numeric/random';
import { fullMetrics } from './metrics';
import { partingOfRuns } from './runs-verdict';

describe('partingOfRuns', () => {
  it('a near tie within k × the floor is benign; a wide gap names the run that chose against the exact forward', () => {
    for (let s = 0; s < 60; s++) {
      const seed = freshSeed() + s;
      const rng = mulberry32(seed);
      const V = 20 + Math.floor(rng() * 30);
      const exact = Float64Array.from(randn(rng, V));
      // the floor: an fp32 path's logits, off by about 1e-6 of the row
      const ref = Float32Array.from(exact, (x, i) => x + 1e-6 * (i % 3 === 0 ? 1 : -1));
      const floor = fullMetrics(ref, exact, 'fp32');
      const [a, b] = [0, 1 + Math.floor(rng() * (V - 1))];
      const k = 10;
      const msg = `seed ${seed}`;
      // a near tie: b a hair (within the floor) below a
      const tie = Float64Array.from(exact);
      tie[b] = tie[a] - 0.5e-6;
      const p = partingOfRuns(
        { rows: 9, row: 8, chose: { a, b } },
        6,
        { A: tie, B: tie },
        tie,
        floor,
        'fp32',
        k,
      );
      expect(p.nearTie, msg).toBe(true);
      expect([p.step, p.row, p.rows], msg).toEqual([3, 8, 9]);
      expect(p.words, msg).toContain('The texts part at decode step 3 (position 8): ');
      expect(p.words, msg).toContain('a near tie that rounding may flip');
      // a wide gap: A chose the exact larger one, so B chose against the exact forward (and the other way round)
      const wide = Float64Array.from(exact);
      wide[a] = wide[b] + 0.5;
      const q = partingOfRuns(
        { rows: 9, row: 8, chose: { a, b } },
        6,
        { A: wide, B: null },
        wide,
        floor,
        'fp32',
        k,
      );
      expect(q.nearTie, msg).toBe(false);
      expect(q.exact!.gap, msg).toBeCloseTo(0.5, 12);
      expect(q.margin, msg).toEqual({ A: wide[a] - wide[b], B: null });
      expect(q.words, msg).toContain('not a near tie — run B chose against the exact forward');
      const r = partingOfRuns(
        { rows: 9, row: 8, chose: { a: b, b: a } },
        6,
        { A: null, B: null },
        wide,
        floor,
        'fp32',
        k,
      );
      expect(r.words, msg).toContain('run A chose against the exact forward');
      // a run that does not say what it chose: no gap, no verdict on the tie
      const u = partingOfRuns(
        { rows: 9, row: 8, chose: { a, b: null } },
        6,
        { A: null, B: null },
        wide,
        floor,
        'fp32',
        k,
      );
      expect([u.exact, u.nearTie], msg).toEqual([null, null]);
    }
  });
});
