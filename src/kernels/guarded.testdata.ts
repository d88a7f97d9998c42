// Output buffers with a guard band, for kernel tests: each output is poisoned with NaN before the kernel runs and
// followed by `guard` floats of a sentinel the kernel must not touch; reading one back fails on a write past its end.
// And the many-seed sweep: KERNEL_SWEEP=n registers every case n times, each drawing a fresh seed.
import { expect } from 'vitest';
import { compare, type Harness } from './testing';

export const SWEEP_ROUNDS = Number(process.env.KERNEL_SWEEP ?? 1);
/** The suffix of a sweep round's describe(): empty without a sweep. */
export const roundLabel = (r: number): string => (SWEEP_ROUNDS > 1 ? ` (round ${r})` : '');

/** `harness` is a getter: a test file's harness is made in beforeAll, after this is called. */
export function guardedOutputs(harness: () => Harness, guard: number, sentinel: number) {
  return {
    /** An output of n floats poisoned with NaN, followed by the guard band. */
    guarded(n: number): GPUBuffer {
      const a = new Float32Array(n + guard).fill(Number.NaN);
      a.fill(sentinel, n);
      return harness().upload(a);
    },
    /** Reads a guarded output (a copy of its n values), failing on a write past its end. */
    async readGuarded(what: string, buf: GPUBuffer, n: number, seed: number): Promise<Float32Array> {
      const all = await harness().read(buf, n + guard);
      const hit = all.subarray(n).findIndex((v) => v !== sentinel);
      expect(hit, `${what} (seed ${seed}): written past its end at +${hit}`).toBe(-1);
      return all.slice(0, n);
    },
  };
}

/** `got` against `ref` within `tol` (absolute, or per element), the report naming the seed on failure. */
export function expectClose(
  what: string,
  got: Float32Array,
  ref: ArrayLike<number>,
  tol: number | ((i: number) => number),
  seed: number,
): void {
  const r = compare(what, got, ref, tol, seed);
  expect(r.ok, r.report).toBe(true);
}
