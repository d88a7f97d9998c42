// How a recorded decode's read packs its taps into staging buffers (decode-record.ts packs): consecutive runs that
// cover every tap once, in order, each within the cap unless one tap alone is larger — for random sizes and caps.
import { describe, expect, it } from 'vitest';
import { freshSeed } from '../kernels/testing';
import { mulberry32 } from '../numeric/random';
import { packs } from './decode-record';

describe('packs', () => {
  it('covers every size once, in order, each pack within the cap or a single size past it', () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    for (let n = 0; n < 200; n++) {
      const cap = 1 + Math.floor(rng() * 100);
      const sizes = Array.from({ length: Math.floor(rng() * 30) }, () => Math.floor(rng() * 1.5 * cap));
      const got = packs(sizes, cap);
      const ctx = `seed ${seed} case ${n}: cap ${cap}, sizes ${sizes.join(',')}`;
      expect(
        got.flatMap(([i, j]) => Array.from({ length: j - i }, (_, k) => i + k)),
        ctx,
      ).toEqual(sizes.map((_, i) => i));
      for (const [i, j] of got) {
        const sum = sizes.slice(i, j).reduce((a, b) => a + b, 0);
        expect(j - i === 1 || sum <= cap, ctx).toBe(true);
        // Greedy: the next size would not have fit.
        if (j < sizes.length) expect(sum + sizes[j], ctx).toBeGreaterThan(cap);
      }
    }
  });
});
