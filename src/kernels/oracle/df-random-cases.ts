// Random inputs for the double-float library's ops (tests and tools/df-check.ts): many magnitudes plus the
// adversarial shapes of each op, every operand a df pair whose hi + lo is exactly the f64 the reference gets;
// and the per-op error bounds with their reasons (see df.test.ts's header).
import type { DfCase, DfOp } from './df-test-kernel';

export const U2 = 2 ** -48;
const REF = 2 ** -52; // the f64 reference's rounding, relative
const FLUSH = 2 ** -125; // absolute: a lo part below the smallest normal f32 may be flushed

export const DF_REL: Record<DfOp, number> = {
  two_sum: 0,
  fast_two_sum: 0,
  two_prod: 0,
  add: 3 * U2 + REF,
  sub: 3 * U2 + REF,
  add_f: 2 * U2 + REF,
  mul_f: 2 * U2 + REF,
  mul: 7 * U2 + REF,
  div: 8 * U2,
  sqrt: 8 * U2,
  rsqrt: 8 * U2,
  exp: 10 * U2,
  erf: 10 * U2,
  erfc: 10 * U2,
  gelu: 10 * U2,
};
export const DF_ABS: Partial<Record<DfOp, number>> = { exp: FLUSH, erfc: FLUSH, gelu: FLUSH };

type Rng = () => number;

/** A random f32 with a uniform exponent in [e0, e1] and a random sign (or positive). */
function randF32(rng: Rng, e0: number, e1: number, positive = false): number {
  const e = Math.floor(e0 + (e1 - e0 + 1) * rng());
  const v = Math.fround((1 + rng()) * 2 ** e);
  return positive || rng() < 0.5 ? v : -v;
}

/** The df pair nearest v whose hi + lo is exactly representable in f64, lo dropped when it is not or when it
 * would be a subnormal f32 (a GPU may flush it on load: the input would not be the one the reference gets). */
function toDf(v: number): [number, number] {
  const hi = Math.fround(v);
  const lo = Math.fround(v - hi);
  return hi + lo - hi === lo && Math.abs(lo) >= 2 ** -126 ? [hi, lo] : [hi, 0];
}

/** A random df: hi with a uniform exponent in [e0, e1], lo a random normalised tail (|lo| <= ulp(hi)/2). */
function randDf(rng: Rng, e0: number, e1: number, positive = false): [number, number] {
  const hi = randF32(rng, e0, e1, positive);
  return toDf(hi + hi * 2 ** -25 * (2 * rng() - 1));
}

function uniformDf(rng: Rng, lo: number, hi: number): [number, number] {
  return toDf(lo + (hi - lo) * rng());
}

const ZERO: readonly [number, number] = [0, 0];

/**
 * An argument whose |z| = |a| / scale lies where erfc comes from the Taylor intervals of erfcx (0.5 <= |z| < 3,
 * width 1/4: shaders/oracle/df_math.wgsl df_erfcx_mid): half uniform over them, half within 2^-20 of an edge.
 */
function midErfcArg(rng: Rng, scale: number, sign = 1): [number, number] {
  const z =
    rng() < 0.5 ? 0.5 + 2.5 * rng() : 0.5 + 0.25 * Math.floor(11 * rng()) + 2 ** -20 * (2 * rng() - 1);
  return toDf(sign * z * scale);
}

/** Random cases for one op: many magnitudes, plus the adversarial shapes each op has. */
export function dfRandomCases(op: DfOp, rng: Rng, n: number): DfCase[] {
  const out: DfCase[] = [];
  for (let i = 0; i < n; i++) {
    const k = i % 4;
    switch (op) {
      case 'two_sum':
      case 'fast_two_sum': {
        let a = randF32(rng, -50, 50);
        let b = k === 0 ? -a * Math.fround(1 + 2 ** -23 * Math.floor(8 * rng())) : randF32(rng, -50, 50);
        b = Math.fround(b);
        if (op === 'fast_two_sum' && Math.abs(a) < Math.abs(b)) [a, b] = [b, a];
        out.push({ op, a: [a, 0], b: [b, 0] });
        break;
      }
      case 'two_prod': {
        // Products >= 2^-60: the error term (>= 2^-108 when not 0) stays a normal f32. Near powers of two too.
        const a =
          k === 0 ? Math.fround(2 ** Math.floor(20 * rng() - 10) * (1 - 2 ** -24)) : randF32(rng, -30, 30);
        out.push({ op, a: [a, 0], b: [randF32(rng, -30, 30), 0] });
        break;
      }
      case 'add':
      case 'sub': {
        const a = randDf(rng, -40, 40);
        const x = a[0] + a[1];
        let b: [number, number];
        if (k === 0 || k === 1) {
          // Cancellation: b within a relative 2^-j of ∓a (j up to 40: deep into the lo part).
          const j = 1 + Math.floor(40 * rng());
          const t = (op === 'add' ? -x : x) * (1 + 2 ** -j * (2 * rng() - 1));
          b = toDf(t);
        } else b = randDf(rng, -40, 40);
        out.push({ op, a, b });
        break;
      }
      case 'mul':
      case 'div':
        out.push({ op, a: randDf(rng, -30, 30), b: randDf(rng, -30, 30) });
        break;
      case 'add_f':
        out.push({ op, a: randDf(rng, -30, 30), b: [randF32(rng, -30, 30), 0] });
        break;
      case 'mul_f':
        out.push({ op, a: randDf(rng, -30, 30), b: [randF32(rng, -30, 30), 0] });
        break;
      case 'sqrt':
      case 'rsqrt': {
        const a =
          k === 0
            ? toDf(2 ** Math.floor(60 * rng() - 30) * (1 + 2 ** -40 * rng()))
            : randDf(rng, -95, 126, true); // up to the f32 range: the 4^k scaling
        out.push({ op, a, b: ZERO });
        break;
      }
      case 'exp': {
        const a =
          k === 0 ? uniformDf(rng, -1, 1) : k === 1 ? uniformDf(rng, -1e-3, 1e-3) : uniformDf(rng, -104, 0);
        out.push({ op, a, b: ZERO });
        break;
      }
      case 'erf':
      case 'erfc': {
        const r = rng();
        const a =
          k === 0
            ? uniformDf(rng, 0.45, 0.55) // the switch between series and continued fraction
            : k === 1
              ? randDf(rng, -40, 2)
              : k === 3
                ? midErfcArg(rng, 1) // the Taylor intervals of erfcx, 0.5 <= |z| < 3, and their edges
                : op === 'erf'
                  ? uniformDf(rng, -10, 10)
                  : uniformDf(rng, -6, 10);
        out.push({ op, a: r < 0.5 || op === 'erfc' ? a : [-a[0], -a[1]], b: ZERO });
        break;
      }
      case 'gelu': {
        const a =
          k === 0
            ? rng() < 0.5
              ? uniformDf(rng, -16, 16)
              : midErfcArg(rng, Math.SQRT2, rng() < 0.5 ? 1 : -1) // erfcx's intervals in x = z·√2
            : k === 1
              ? uniformDf(rng, -14, -0.6) // the left tail and the switch at −0.707
              : k === 2
                ? randDf(rng, -40, 4)
                : randDf(rng, -40, 127);
        out.push({ op, a, b: ZERO });
        break;
      }
    }
  }
  return out;
}
