// The cause search as a whole (each cause planted and found is catalog/plants.test.ts): a large op's cause named from
// samples of its columns, a correct op names none, and an error no cause covers gets "no known cause explains it".
// Fresh seeds each run (CAUSE_SEEDS=n runs n of them; the seed is in every failure message).
import { describe, expect, it } from 'vitest';
import { explain } from './explain';
import { plantOp } from './plant.testdata';
import type { OpKind, Variant } from './types';

const SEEDS = Number(process.env.CAUSE_SEEDS ?? 2);
const base = Math.floor(Math.random() * 2 ** 30);

describe('the cause search', () => {
  it('a large op is screened and scored on samples of its columns, and its cause still named', () => {
    const plants: [OpKind, Variant, string][] = [
      ['fc1', { inputFormat: 'bf16' }, 'input-bf16'],
      ['fc2', { bias: 0 }, 'bias-dropped'],
      ['mlp_up', { act: 'gelu-tanh' }, 'gelu-tanh'],
      ['fc1', { rowShift: { shift: 1, from: 9 } }, 'rows-shifted'],
    ];
    for (let j = 0; j < Math.max(1, SEEDS / 5); j++)
      for (const [op, variant, id] of plants) {
        const seed = base + 611953 * j;
        const d = plantOp(seed, op, () => variant, 10, true);
        const v = explain(d);
        expect(v.sampled, `seed ${seed}: ${op}`).not.toBeNull();
        expect(v.named[0]?.id, `seed ${seed}: ${v.words}`).toBe(id);
      }
  });

  it('a correct op names no cause and searches nothing', () => {
    for (let j = 0; j < 3 * SEEDS; j++) {
      const ops: OpKind[] = ['fc1', 'attention', 'ln1', 'act', 'residual'];
      const seed = base + 104729 * j;
      const d = plantOp(seed, ops[j % ops.length], () => ({}));
      const v = explain(d);
      expect(v.error, `seed ${seed}`).toBeLessThanOrEqual(d.k);
      expect(v.named, `seed ${seed}`).toEqual([]);
      expect(v.tested, `seed ${seed}`).toEqual([]);
    }
  });

  it('an error no family covers is "no known cause explains it", with what came closest', () => {
    for (let j = 0; j < 3 * SEEDS; j++) {
      const seed = base + 15485863 * j;
      // A wrong product the catalog has no variant for: the weights scaled by 1.001.
      const d = plantOp(seed, 'fc1', () => ({}));
      d.recorded = Float32Array.from(
        d.recorded,
        (x, i) =>
          x + 1e-3 * (d.exact[i] - d.weights.linear!.bias!.data[i % (d.exact.length / d.tokens.length)]),
      );
      const v = explain(d);
      expect(v.error, `seed ${seed}`).toBeGreaterThan(d.k);
      expect(v.named, `seed ${seed}: ${v.words}`).toEqual([]);
      expect(v.words).toMatch(/^no known cause explains it \(closest: /);
      expect(v.tested.length).toBeGreaterThan(10);
    }
  });
});
