// The fixed, adversarial input set of the double-float self-test (src/engine/df-selftest.ts): cancellation,
// rounding ties, values next to powers of two, results next to the smallest normal f32, large and small
// magnitudes, and each function's switch points. Every operand is a df pair whose hi + lo is exactly the f64
// the reference gets; no expected value here is typed in: each comes from src/kernels/oracle/df-reference.ts.
import { dfSplitExact } from '../kernels/oracle/df-reference';
import type { DfCase, DfOp } from '../kernels/oracle/df-test-kernel';

const f = Math.fround;
const ZERO: readonly [number, number] = [0, 0];

/** f32 operands (the error-free transforms read only hi). */
function eft(op: DfOp, a: number, b: number): DfCase {
  if (f(a) !== a || f(b) !== b) throw new Error(`self-test case ${op}(${a}, ${b}): operands must be f32`);
  return { op, a: [a, 0], b: [b, 0] };
}

/** The nearest df pair of v whose hi + lo f64 holds exactly (v itself when it is one; 1/3 needs rounding), with
 * the lo part dropped where it would be a subnormal f32 (GPUs may flush it on load). */
function near(v: number): number {
  const hi = f(v);
  const lo = f(v - hi);
  return hi + lo - hi === lo && Math.abs(lo) >= 2 ** -126 ? hi + lo : hi;
}

function bin(op: DfOp, a: number, b: number): DfCase {
  return { op, a: dfSplitExact(near(a)), b: dfSplitExact(near(b)) };
}

function un(op: DfOp, a: number): DfCase {
  return { op, a: dfSplitExact(near(a)), b: ZERO };
}

const P2 = (e: number) => 2 ** e;

export function selfTestEftCases(): DfCase[] {
  return [
    eft('two_sum', 1, P2(-30)),
    eft('two_sum', 1, -P2(-30)),
    eft('two_sum', 1 + P2(-23), P2(-24)), // a tie, rounds up to even
    eft('two_sum', 1, P2(-24)), // a tie, rounds down to even
    eft('two_sum', P2(24), 1),
    eft('two_sum', f(1e30), f(1e-30)),
    eft('two_sum', f(0.1), f(-0.1)),
    eft('two_sum', f(0.1), f(0.2)),
    eft('two_sum', -1.5, 1.5 + P2(-22)),
    eft('two_sum', P2(-100), P2(-120)),
    eft('two_sum', 4 * P2(-126), -3 * P2(-126)), // a result at the smallest normal
    eft('two_sum', f(3e38), f(-3e38 * (1 - 2 ** -20))),
    eft('fast_two_sum', 1, P2(-25)),
    eft('fast_two_sum', P2(20), f(-3.3e-3)),
    eft('fast_two_sum', f(1e10), -1),
    eft('two_prod', 1 + P2(-23), 1 + P2(-23)),
    eft('two_prod', 4097, 4099),
    eft('two_prod', f(0.1), f(0.1)),
    eft('two_prod', 1 - P2(-24), 1 - P2(-24)),
    eft('two_prod', 3, f(1 / 3)),
    eft('two_prod', 2 - P2(-23), 2 - P2(-23)),
    eft('two_prod', f(1e19), f(1.7e19)),
    eft('two_prod', P2(-40) * (1 + P2(-23)), P2(-40) * (1 - P2(-23))), // error term −2^-126: smallest normal
    eft('two_prod', f(-7.5), f(1.2345678)),
    eft('two_prod', f(Math.PI), f(Math.E)),
  ];
}

export function selfTestDfCases(): DfCase[] {
  const ln2 = Math.LN2;
  return [
    bin('add', 1 + P2(-40), -1),
    bin('add', near(0.1), near(0.2)),
    bin('add', 1e10 + 2 ** -14, -1e10),
    bin('add', near(1 / 3), -near(1 / 3)),
    bin('add', near(1 / 3), near(2 / 3)),
    bin('add', 1.5 * P2(-100), P2(-100)),
    bin('add', near(8e37), near(9e37)),
    bin('add', 1, P2(-60)),
    bin('sub', 1, 1 - P2(-45)),
    bin('sub', near(Math.PI), near(Math.E)),
    bin('sub', near(1e-20), near(-3e-21)),
    bin('mul', 1 + P2(-30), 1 - P2(-30)),
    bin('mul', near(0.1), 10),
    bin('mul', near(1 / 3), 3),
    bin('mul', near(1.1) * P2(60), near(0.9) * P2(-60)),
    bin('mul', near(3e-15), near(7e-15)),
    bin('mul', near(-1e18), near(1e18)),
    bin('div', 1, 3),
    bin('div', 2, 3),
    bin('div', 1, 1 - P2(-24)),
    bin('div', near(1e30), 7),
    bin('div', -5, near(1e-10)),
    bin('div', near(Math.PI), near(Math.E)),
    bin('add_f', near(1 / 3), f(-1 / 3)),
    bin('add_f', near(1e8 / 7), f(0.1)),
    bin('mul_f', near(1 / 3), 3),
    bin('mul_f', near(Math.PI), f(1e-20)),
    ...[2, 3, 4, 0.5, 1 + P2(-40), near(1e-30), near(1e30), 3 * P2(-80), near(0.999999999)].flatMap((v) => [
      un('sqrt', v),
      un('rsqrt', v),
    ]),
    ...[
      0,
      -1e-10,
      near(-0.5 * ln2), // k = round(−0.5) ties to even
      near(-1.5 * ln2),
      -1,
      -10,
      -37.5,
      -50,
      -70,
      near(-87.3),
      near(-103.9),
      -104.5,
      1,
      10,
      88,
      near(-1e-30),
    ].map((v) => un('exp', v)),
    ...[
      0,
      1e-30,
      1e-8,
      near(0.1),
      near(0.4999999),
      0.5,
      near(0.5000001),
      -0.75,
      1,
      2,
      3.5,
      near(5.9),
      near(8.99),
      9.5,
      -9.5,
      -3,
    ].map((v) => un('erf', v)),
    ...[near(-0.3), 0, near(0.49999), 0.5, near(0.9), 1.5, 3, 6, 8.5, near(9.05), -2, -9.5].map((v) =>
      un('erfc', v),
    ),
    ...[
      0,
      1e-20,
      -1e-20,
      near(0.3),
      near(-0.3),
      near(-Math.SQRT1_2),
      near(-0.7072),
      near(0.7072),
      1,
      -1,
      -2.5,
      -5,
      -8,
      -10,
      -12,
      near(-13.05), // erfc(|x|/√2) is subnormal here, gelu is not
      -14,
      -25,
      near(12.99),
      13,
      100,
      near(1e30),
      near(-1e30),
      near(3e38),
    ].map((v) => un('gelu', v)),
  ];
}
