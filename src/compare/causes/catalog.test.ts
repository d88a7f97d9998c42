// The cause library, tested. Every cause planted and found: each cause file's plants (catalog/<file>.plant.ts, beside
// it) are planted in ops of random shapes (recorded as an fp32 kernel of that variant would write them), and the
// search must name the cause first, with its parameters. The folder is held to its layout: every cause a file
// exports is in index.ts's list, and each file's plants name exactly its causes. Then the search as a whole: a
// large op's cause named from samples of its columns, a correct op names none, and an error no cause covers gets
// "no known cause explains it". One test file for all of it: a file per cause would cost vitest a module graph
// each (about three times the time). Fresh seeds each run (CAUSE_SEEDS=n runs n of them; the seed is in every
// failure message).
import { describe, expect, it } from 'vitest';
import { CAUSES } from './catalog';
import { explain } from './explain';
import { expectFound, type Plant, plantOp } from './plant.testdata';
import type { Cause, OpKind, Variant } from './types';

const plantFiles = import.meta.glob<{ PLANTS: Plant[] }>('./catalog/*.plant.ts', { eager: true });
const causeFiles = import.meta.glob<Record<string, unknown>>(
  ['./catalog/*.ts', '!./catalog/*.plant.ts', '!./catalog/index.ts'],
  { eager: true },
);

/** A file's name without its folder and extension ('./catalog/bias.plant.ts' → 'bias'). */
const nameOf = (path: string) => path.replace(/^.*\//, '').replace(/(\.plant)?\.ts$/, '');
const isCause = (x: unknown): x is Cause =>
  typeof x === 'object' && x !== null && typeof (x as Cause).id === 'string' && 'candidates' in x;
/** The causes each file of the folder exports, by the file's name. */
const causesOf = new Map(
  Object.entries(causeFiles).map(([path, m]) => [nameOf(path), Object.values(m).filter(isCause)]),
);
const plantsOf = new Map(Object.entries(plantFiles).map(([path, m]) => [nameOf(path), m.PLANTS]));
const PLANTS = [...plantsOf].sort(([a], [b]) => a.localeCompare(b)).flatMap(([, plants]) => plants);

const SEEDS = Number(process.env.CAUSE_SEEDS ?? 2);
const base = Math.floor(Math.random() * 2 ** 30);

describe('the cause library', () => {
  it('lists every cause its files export, once, and plants exactly the causes of each file', () => {
    const exported = [...causesOf.values()].flat();
    expect(exported.length).toBeGreaterThan(40);
    expect(new Set(CAUSES.map((c) => c.id)).size).toBe(CAUSES.length);
    expect(exported.filter((c) => !CAUSES.includes(c)).map((c) => c.id)).toEqual([]);
    expect(CAUSES.filter((c) => !exported.includes(c)).map((c) => c.id)).toEqual([]);
    for (const [file, causes] of causesOf) {
      const planted = [...new Set((plantsOf.get(file) ?? []).map((p) => p.cause))].sort();
      expect(planted, `${file}.plant.ts`).toEqual(causes.map((c) => c.id).sort());
    }
    expect([...plantsOf.keys()].filter((file) => !causesOf.has(file))).toEqual([]);
  });

  it.each(PLANTS.map((p, i) => [`${p.cause} at ${p.op}`, i] as const))('finds %s', (_, i) => {
    for (let j = 0; j < SEEDS; j++) expectFound(PLANTS[i], base + 7919 * j + i);
  });
});

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
