// The search's first pass keeps the true cause among its finalists, by construction. Every candidate is first scored
// on a sample of the op's columns (screening, explain.ts SCREEN) and only the causes whose sampled residual is within
// 20 × k (FINALISTS_WITHIN in explain.ts), or the best three, are scored again on the larger sample that decides. A
// planted cause's own variant reproduces the recorded output at every element but for a correct kernel's rounding
// (plant.testdata.ts: the output of the variant with fp32-sized noise; the floor is that noise), so its residual is
// about one floor on any columns at all — the search's sample or any other. This test holds that premise to every
// plant of the catalog on ops large enough to be sampled: the planted variant's screened residual stays within the cut
// on the search's own screening sample and on random samples of the same size.
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../numeric/random';
import { SCREEN, scoredColumns, scorer } from './explain';
import { type Plant, plantOp } from './plant.testdata';

const plantFiles = import.meta.glob<{ PLANTS: Plant[] }>('./catalog/*.plant.ts', { eager: true });
const PLANTS = Object.keys(plantFiles)
  .sort()
  .flatMap((f) => plantFiles[f].PLANTS);
/** explain.ts FINALISTS_WITHIN: the screened residual (in k) under which a cause is scored again. */
const FINALISTS_WITHIN = 20;
const SEEDS = Number(process.env.CAUSE_SEEDS ?? 2);
const base = Math.floor(Math.random() * 2 ** 30);

describe('the search screens on a sample', () => {
  it.each(PLANTS.map((p, i) => [`${p.cause} at ${p.op}`, i] as const))(
    'keeps %s among the finalists on any sample',
    (_, i) => {
      const p = PLANTS[i];
      for (let j = 0; j < SEEDS; j++) {
        let seed = base + 7919 * j + i;
        // (as expectFound: a draw where the planted variant equals the exact op has nothing to find; the next is taken)
        let d = plantOp(seed, p.op, p.variant, 10, true);
        for (let redraw = 1; redraw < 20 && !(scorer(d, null)({}) > 10 * d.k); redraw++)
          d = plantOp((seed += 1_000_003), p.op, p.variant, 10, true);
        const v = p.variant(d);
        const screen = scoredColumns(d, SCREEN);
        const width = d.recorded.length / d.tokens.length;
        const rng = mulberry32(seed);
        const samples = [screen];
        if (screen)
          for (let s = 0; s < 3; s++) {
            const cols = new Set<number>();
            while (cols.size < screen.length) cols.add(Math.floor(rng() * width));
            samples.push(Int32Array.from([...cols].sort((a, b) => a - b)));
          }
        for (const cols of samples) {
          const r = scorer(d, cols, true)(v);
          expect(
            r,
            `seed ${seed}: ${p.cause} at ${p.op}, ${cols?.length ?? width} of ${width} columns`,
          ).toBeLessThanOrEqual(FINALISTS_WITHIN * d.k);
        }
      }
    },
  );
});
