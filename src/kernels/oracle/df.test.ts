// Every double-float library operation on the GPU (shaders/oracle/df.wgsl, df_math.wgsl through the df_probe
// kernel) against f64 on fresh seeded random inputs of many magnitudes; outputs NaN-poisoned, element counts not
// multiples of the workgroup (64). The worst error of each op is printed. Replay with KERNEL_SEED=<seed>;
// DF_TEST_N=<n> runs n inputs per op (default 1500).
//
// Bounds, in units of u² = 2^-48 = 3.55e-15 (u = 2^-24, the f32 unit roundoff; a df holds ~2^-49):
// - error-free transforms: exact (checked as exact f64 pairs, inputs chosen so no error term is subnormal);
// - add/sub 3u², add_f 2u², mul_f 2u², mul 7u²: the proven bounds of these algorithms (Joldes, Muller, Popescu,
//   "Tight and rigorous error bounds for basic building blocks of double-word arithmetic", 2017: AccurateDWPlusDW,
//   DWPlusFP, DWTimesFP, DWTimesDW1), plus 2^-52 for the f64 reference's own rounding;
// - div, sqrt, rsqrt 8u²: long division / two Newton steps, each result the sum of three corrections whose
//   remainders are computed with the operations above (measured worst ~3u²);
// - exp, erf, erfc, gelu: 8u² relative (measured worst 5.5u² over 10^5 inputs per function on SwiftShader), plus an
//   absolute 2^-125 where the result's lo part falls below the smallest normal f32 (flushed to zero on GPUs:
//   the df format itself ends there). A lost lo part, a wrong coefficient or a dropped term shows up at >= 1e-9.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../model/random';
import { createHarness, freshSeed, type Harness } from '../testing';
import { dfReference, eftExact } from './df-reference';
import { type DfCase, type DfOp, dfProbe, packDfCases } from './df-test-kernel';

const U2 = 2 ** -48;
const REF = 2 ** -52; // the f64 reference's rounding, relative
const FLUSH = 2 ** -125; // absolute: a lo part below the smallest normal f32 may be flushed
const N = Number(process.env.DF_TEST_N ?? 1500) + 37; // not a multiple of 64

const REL: Record<DfOp, number> = {
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
  exp: 8 * U2,
  erf: 8 * U2,
  erfc: 8 * U2,
  gelu: 8 * U2,
};
const ABS: Partial<Record<DfOp, number>> = { exp: FLUSH, erfc: FLUSH, gelu: FLUSH };

type Rng = () => number;

/** A random f32 with a uniform exponent in [e0, e1] and a random sign (or positive). */
function randF32(rng: Rng, e0: number, e1: number, positive = false): number {
  const e = Math.floor(e0 + (e1 - e0 + 1) * rng());
  const v = Math.fround((1 + rng()) * 2 ** e);
  return positive || rng() < 0.5 ? v : -v;
}

/** The df pair nearest v whose hi + lo is exactly representable in f64 (lo dropped when it is not). */
function toDf(v: number): [number, number] {
  const hi = Math.fround(v);
  const lo = Math.fround(v - hi);
  return hi + lo - hi === lo ? [hi, lo] : [hi, 0];
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

/** Random cases for one op: many magnitudes, plus the adversarial shapes each op has. */
function casesFor(op: DfOp, rng: Rng, n: number): DfCase[] {
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
              : op === 'erf'
                ? uniformDf(rng, -10, 10)
                : uniformDf(rng, -6, 10);
        out.push({ op, a: r < 0.5 || op === 'erfc' ? a : [-a[0], -a[1]], b: ZERO });
        break;
      }
      case 'gelu': {
        const a =
          k === 0
            ? uniformDf(rng, -16, 16)
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

let h: Harness;
let fmaFused = false;
beforeAll(async () => {
  h = await createHarness();
  // DF_FMA is usable only where fma is fused (exact TwoProd); SwiftShader's is not.
  const probe = casesFor('two_prod', mulberry32(1), 64 + 37);
  const y = await runCases(probe, true);
  fmaFused = probe.every((c, i) => eftExact(c.op, c.a[0], c.b[0], y[2 * i], y[2 * i + 1]));
  console.log(`adapter ${h.ctx.adapter.description || h.ctx.adapter.vendor}: fma fused = ${fmaFused}`);
});
afterAll(() => h?.destroy());

async function runCases(cases: DfCase[], dfFma: boolean, dfBreak = 0): Promise<Float32Array> {
  const p = packDfCases(cases);
  const y = h.poisoned(2 * cases.length);
  await h.run([
    dfProbe('df_probe', { op: h.upload(p.op), a: h.upload(p.a), b: h.upload(p.b), y }, cases.length, {
      dfFma,
      dfBreak,
    }),
  ]);
  return h.read(y, 2 * cases.length);
}

const OPS: DfOp[] = [
  'add',
  'sub',
  'mul',
  'div',
  'sqrt',
  'rsqrt',
  'add_f',
  'mul_f',
  'exp',
  'erf',
  'erfc',
  'gelu',
];

describe('double-float library on the GPU vs f64', () => {
  it.each(['two_sum', 'fast_two_sum', 'two_prod'] as DfOp[])('%s is exact', async (op) => {
    const seed = freshSeed();
    const cases = casesFor(op, mulberry32(seed), N);
    // two_prod: the Dekker form (DF_FMA = false) must be exact; the fma form where fma is fused.
    for (const dfFma of op === 'two_prod' ? [false, ...(fmaFused ? [true] : [])] : [fmaFused]) {
      const y = await runCases(cases, dfFma);
      const bad = cases.flatMap((c, i) =>
        eftExact(c.op, c.a[0], c.b[0], y[2 * i], y[2 * i + 1])
          ? []
          : [`  ${op}(${c.a[0]}, ${c.b[0]}) -> (${y[2 * i]}, ${y[2 * i + 1]})`],
      );
      expect(
        bad.length,
        `${op} DF_FMA=${dfFma} (seed ${seed}): ${bad.length} inexact\n${bad.slice(0, 8).join('\n')}`,
      ).toBe(0);
    }
  });

  it.each(OPS)('%s within its bound', async (op) => {
    const seed = freshSeed();
    const cases = casesFor(op, mulberry32(seed), N);
    const y = await runCases(cases, fmaFused);
    const rel = REL[op];
    const abs = ABS[op] ?? 0;
    let worst = 0;
    let worstAt = '';
    const bad: string[] = [];
    cases.forEach((c, i) => {
      const got = y[2 * i] + y[2 * i + 1];
      const want = dfReference(op, c.a, c.b);
      const err = Math.abs(got - want);
      const r =
        want === 0 ? (err === 0 ? 0 : Number.POSITIVE_INFINITY) : Math.max(0, err - abs) / Math.abs(want);
      const ok = Number.isFinite(got) && err <= rel * Math.abs(want) + abs;
      if (!(r <= worst)) {
        worst = r;
        worstAt = `a = ${c.a[0] + c.a[1]}${op === 'add' || op === 'sub' || op === 'mul' || op === 'div' || op.endsWith('_f') ? `, b = ${c.b[0] + c.b[1]}` : ''}`;
      }
      if (!ok && bad.length < 8)
        bad.push(
          `  ${op}(${c.a[0]}+${c.a[1]}, ${c.b[0]}+${c.b[1]}) = ${got}, want ${want}, |err| ${err.toExponential(3)}`,
        );
    });
    console.log(
      `${op} (seed ${seed}, ${cases.length} inputs): worst relative error ${worst.toExponential(2)} = ${(worst / U2).toFixed(2)} u² at ${worstAt}`,
    );
    expect(
      bad.length,
      `${op} (seed ${seed}): bound ${rel.toExponential(2)} rel + ${abs} abs\n${bad.join('\n')}`,
    ).toBe(0);
  });

  it('a library whose TwoSum drops its error term fails here (DF_BREAK = 1)', async () => {
    const seed = freshSeed();
    const cases = casesFor('add', mulberry32(seed), 200);
    const y = await runCases(cases, fmaFused, 1);
    const worst = Math.max(
      ...cases.map((c, i) => {
        const want = dfReference('add', c.a, c.b);
        return Math.abs(y[2 * i] + y[2 * i + 1] - want) / Math.abs(want);
      }),
    );
    expect(worst, `seed ${seed}`).toBeGreaterThan(REL.add * 100);
  });
});
