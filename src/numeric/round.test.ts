// roundTo against the bit-level conversions the weights loader uses (numeric/bits.ts), on f32 inputs where one
// rounding is the whole story, plus the edges: ties to even, subnormals, overflow, signed zero.
import { describe, expect, it } from 'vitest';
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from './bits';
import { FORMATS, roundF32Into, roundF32ToF16, roundTo, roundToExact, ulpOf } from './round';

function seeded(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('roundF32Into', () => {
  it("equals roundTo on f32 values of every bit pattern and in each format's range (50 seeds)", () => {
    for (let seed = 1; seed <= 50; seed++) {
      const r = seeded(7000 + seed);
      const n = 1 + Math.floor(r() * 700);
      // Raw bit patterns (every magnitude, subnormals, NaN, ±Inf) and values near each format's range.
      const src = new Float32Array(n);
      const bits = new Uint32Array(src.buffer);
      for (let i = 0; i < n; i++)
        if (i % 2) bits[i] = Math.floor(r() * 2 ** 32);
        else src[i] = (r() - 0.5) * 2 ** Math.floor(r() * 40 - 20);
      // an offset view, as a weight row is
      const view = src.subarray(Math.min(n - 1, 3));
      for (const f of FORMATS) {
        for (const dst of [new Float64Array(view.length), new Float32Array(view.length)]) {
          roundF32Into(f, view, dst);
          for (let i = 0; i < view.length; i++)
            expect(
              Object.is(dst[i], Math.fround(roundTo(f, view[i]))) ||
                (Number.isNaN(dst[i]) && Number.isNaN(view[i])),
              `seed ${seed} ${f} x = ${view[i]}: ${dst[i]}`,
            ).toBe(true);
        }
      }
    }
  });
});

describe('roundTo', () => {
  it('matches the bit conversions on random f32 values of every magnitude (50 seeds)', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const r = seeded(seed);
      const bits = new Uint32Array(1);
      const f = new Float32Array(bits.buffer);
      for (let i = 0; i < 400; i++) {
        bits[0] = Math.floor(r() * 2 ** 32);
        const x = f[0];
        if (!Number.isFinite(x)) continue;
        const msg = `seed ${seed}, x = ${x}`;
        expect(roundTo('fp16', x), msg).toBe(f16BitsToF32(f32ToF16Bits(x)));
        expect(roundTo('bf16', x), msg).toBe(bf16BitsToF32(f32ToBf16Bits(x)));
        expect(roundTo('fp32', x), msg).toBe(x);
        expect(roundF32ToF16(x), msg).toBe(roundTo('fp16', x));
        // and one in fp16's range, where the bit path runs
        const y = Math.fround((r() - 0.5) * 2 ** Math.floor(r() * 32 - 15));
        expect(roundF32ToF16(y), `seed ${seed}, y = ${y}`).toBe(roundTo('fp16', y));
      }
    }
  });

  it("below each format's normal numbers: ties, values that round to ±0 or to the smallest normal, as the definition (50 seeds)", () => {
    const sub: Record<string, [number, number]> = {
      bf16: [-126, 7],
      fp16: [-14, 10],
      tf32: [-126, 10],
      fp32: [-126, 23],
    };
    for (let seed = 1; seed <= 50; seed++) {
      const r = seeded(3000 + seed);
      for (const f of FORMATS) {
        const [emin, mant] = sub[f];
        const q = 2 ** (emin - mant);
        for (let i = 0; i < 200; i++) {
          const sign = r() < 0.5 ? -1 : 1;
          const k = Math.floor(r() * 2 ** mant);
          // a tie (k + 1/2 spacings), any value in the range, one under half a spacing, one next to the smallest normal
          for (const x of [(k + 0.5) * q, r() * 2 ** emin, r() * 0.5 * q, 2 ** emin - r() * q])
            expect(
              Object.is(roundTo(f, sign * x), roundToExact(f, sign * x)),
              `seed ${seed}, ${f}, x = ${sign * x}`,
            ).toBe(true);
        }
      }
    }
  });

  it('the fast paths equal the definition on random doubles and f32 values of every magnitude (50 seeds)', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const r = seeded(1000 + seed);
      for (let i = 0; i < 400; i++) {
        const x = (r() - 0.5) * 2 ** Math.floor(r() * 300 - 150);
        for (const f of FORMATS) {
          expect(roundTo(f, x), `seed ${seed}, ${f}, x = ${x}`).toBe(roundToExact(f, x));
          const y = Math.fround(x);
          expect(roundTo(f, y), `seed ${seed}, ${f}, y = ${y}`).toBe(roundToExact(f, y));
        }
      }
    }
  });

  it('rounds ties to even, keeps subnormals, overflows to Inf', () => {
    expect(roundTo('fp16', 1 + 2 ** -11)).toBe(1); // tie between 1 and 1 + 2^-10: even is 1
    expect(roundTo('fp16', 1 + 3 * 2 ** -11)).toBe(1 + 2 ** -9);
    expect(roundTo('fp16', 2 ** -24)).toBe(2 ** -24); // smallest subnormal
    expect(roundTo('fp16', 2 ** -26)).toBe(0);
    expect(roundTo('fp16', 65519)).toBe(65504);
    expect(roundTo('fp16', 65520)).toBe(Infinity);
    expect(roundTo('bf16', -(1 + 2 ** -8))).toBe(-1);
    expect(roundTo('tf32', 1 + 2 ** -11 + 2 ** -30)).toBe(1 + 2 ** -10);
    expect(Object.is(roundTo('bf16', -0), -0)).toBe(true);
    expect(ulpOf('fp32', 1)).toBe(2 ** -23);
    expect(ulpOf('bf16', 3)).toBe(2 ** -6);
    expect(ulpOf('fp16', 1e-9)).toBe(2 ** -24);
  });
});
