// Every cause planted and found: each cause file's plants (`<file>.plant.ts` beside it) are planted in ops of random
// shapes (recorded as an fp32 kernel of that variant would write them), and the search must name the cause first,
// with its parameters. The folder is held to its layout: every cause a file exports is in index.ts's list, and each
// file's plants cover exactly its causes. One test file for all of them: a file per cause would cost vitest a module
// graph each (about three times the time). Fresh seeds each run (CAUSE_SEEDS=n runs n of them; the seed is in
// every failure message).
import { describe, expect, it } from 'vitest';
import { expectFound, type Plant } from '../plant.testdata';
import type { Cause } from '../types';
import { CAUSES } from '.';

const plantFiles = import.meta.glob<{ PLANTS: Plant[] }>('./*.plant.ts', { eager: true });
const causeFiles = import.meta.glob<Record<string, unknown>>(
  ['./*.ts', '!./*.plant.ts', '!./*.test.ts', '!./index.ts'],
  { eager: true },
);

const isCause = (x: unknown): x is Cause =>
  typeof x === 'object' && x !== null && typeof (x as Cause).id === 'string' && 'candidates' in x;

/** The causes each file exports, by the file's name ('./bias.ts' → 'bias'). */
const causesOf = new Map(
  Object.entries(causeFiles).map(([path, m]) => [path.slice(2, -3), Object.values(m).filter(isCause)]),
);
const PLANTS = Object.entries(plantFiles)
  .sort(([a], [b]) => a.localeCompare(b))
  .flatMap(([, m]) => m.PLANTS);

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
      const plants = plantFiles[`./${file}.plant.ts`]?.PLANTS ?? [];
      const planted = [...new Set(plants.map((p) => p.cause))].sort();
      expect(planted, `${file}.plant.ts`).toEqual(causes.map((c) => c.id).sort());
    }
    for (const path of Object.keys(plantFiles))
      expect(causesOf.has(path.slice(2, -'.plant.ts'.length)), path).toBe(true);
  });

  it.each(PLANTS.map((p, i) => [`${p.cause} at ${p.op}`, i] as const))('finds %s', (_, i) => {
    for (let j = 0; j < SEEDS; j++) expectFound(PLANTS[i], base + 7919 * j + i);
  });
});
