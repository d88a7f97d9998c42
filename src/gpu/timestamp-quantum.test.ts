import { describe, expect, it } from 'vitest';
import { detectQuantumNs, perOpTime, repetitionsFor } from './timestamp-quantum';

// Seeded LCG so a failure can be replayed; the seed is printed in the assertion message.
function lcg(seed: number) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

describe('timestamp quantum', () => {
  it('recovers the step from quantized raw timestamps', () => {
    const seed = (Date.now() ^ 0x5eed) >>> 0;
    const rnd = lcg(seed);
    const q = 65536n;
    const raw: bigint[] = [];
    let t = BigInt(Math.floor(rnd() * 1e9)) * q;
    for (let i = 0; i < 12; i++) {
      t += BigInt(1 + Math.floor(rnd() * 50)) * q + (i % 3 === 0 ? q : 0n);
      raw.push(t, t); // equal pairs (an op shorter than a step) must not spoil the estimate
    }
    expect(detectQuantumNs(raw), `seed ${seed}`).toBe(Number(q));
  });
  it('reports 1 ns for unquantized timestamps and null when nothing can be inferred', () => {
    expect(detectQuantumNs([1000n, 1007n, 1020n])).toBe(1);
    expect(detectQuantumNs([5n, 5n])).toBeNull();
    expect(detectQuantumNs([])).toBeNull();
  });
});

describe('timing by repetition', () => {
  it('repeats short ops until they span the wanted quanta, and not long ones', () => {
    expect(repetitionsFor(10_000, 65_536)).toBe(Math.ceil((8 * 65_536) / 10_000));
    expect(repetitionsFor(0, 65_536, 8, 256)).toBe(256); // read as 0: capped, never infinite
    expect(repetitionsFor(1e6, 65_536)).toBe(1);
    expect(repetitionsFor(10, null)).toBe(1);
    expect(repetitionsFor(10, 1)).toBe(1);
    expect(() => repetitionsFor(10, 100, 8, 0)).toThrow(/bad limits/);
  });
  it('divides the repeated total and flags a total still within a few quanta', () => {
    const reps = repetitionsFor(20_000, 65_536);
    const total = 20_000 * reps;
    const t = perOpTime(total, reps, 65_536);
    expect(t.ns).toBeCloseTo(20_000, 6);
    expect(t.repeats).toBe(reps);
    expect(t.quantized).toBe(false);
    expect(perOpTime(65_536, 1, 65_536).quantized).toBe(true);
    expect(perOpTime(65_536, 1, null).quantized).toBe(false);
    expect(() => perOpTime(1, 0, 1)).toThrow(/positive integer/);
  });
});
