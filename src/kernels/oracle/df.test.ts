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
//   remainders are computed with the operations above (measured worst over 10^5 inputs: 1.8u² div);
// - exp, erf, erfc, gelu 10u² relative: a dozen of the operations above in sequence, whose worst cases do not
//   line up (measured worst over 10^5 inputs each on SwiftShader: exp 2.0u², erf 5.4u², erfc 5.7u², gelu
//   6.2u²), plus an absolute 2^-125 where the result's lo part falls below the smallest normal f32 (flushed on
//   GPUs: the df format itself ends there). A lost lo part, a wrong coefficient or a dropped term shows up at
//   >= 1e-9.
// Operands keep a normal lo part (or 0): a GPU may flush a subnormal one on load.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../numeric/random';
import { createHarness, freshSeed, type Harness } from '../testing';
import { DF_ABS, DF_REL, dfRandomCases, U2 } from './df-random-cases';
import { dfReference, eftExact } from './df-reference';
import { type DfCase, type DfOp, dfProbe, packDfCases } from './df-test-kernel';

const N = Number(process.env.DF_TEST_N ?? 1500) + 37; // not a multiple of 64
const REL = DF_REL;
const ABS = DF_ABS;
const casesFor = dfRandomCases;

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
        const e = Math.abs(y[2 * i] + y[2 * i + 1] - want) / Math.abs(want);
        // a NaN from the broken library is a failure of it too (Math.max would carry the NaN, never > the bound)
        return Number.isNaN(e) ? Number.POSITIVE_INFINITY : e;
      }),
    );
    expect(worst, `seed ${seed}`).toBeGreaterThan(REL.add * 100);
  });
});
