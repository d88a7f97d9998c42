// The slow exact oracle for the fp64 references of the df functions: exp, erf, erfc and exact GELU of a double,
// in BigInt fixed point with FRAC fractional bits (a double is an exact dyadic rational, so the input carries
// no error). Used by tests only, to check src/kernels/oracle/df-reference.ts (and through it the CPU erf/erfc);
// each call takes a fraction of a millisecond to a few milliseconds.

const FRAC = 640n; // fractional bits: at x = 12 the series peaks near 2^208 and erfc(x) ≈ 2^-212, keeping > 200 bits
const ONE = 1n << FRAC;

/** A double as a fixed-point BigInt (exact for |x| >= 2^-FRAC, which every input here is or rounds to 0). */
function toFixed(x: number): bigint {
  if (!Number.isFinite(x)) throw new Error(`exact oracle: non-finite input ${x}`);
  if (x === 0) return 0n;
  const neg = x < 0;
  let a = Math.abs(x);
  let e = 0;
  while (a >= 2 ** 52) {
    a /= 2;
    e++;
  }
  while (a < 2 ** 52 && !Number.isInteger(a)) {
    a *= 2;
    e--;
  }
  // x = a · 2^e with a an integer (exact: only power-of-two scalings).
  const m = BigInt(a);
  const shift = FRAC + BigInt(e);
  const v = shift >= 0n ? m << shift : m >> -shift;
  return neg ? -v : v;
}

/** A fixed-point BigInt to the nearest double (60 significant bits kept before the one rounding). */
function toNumber(v: bigint): number {
  if (v === 0n) return 0;
  const neg = v < 0n;
  const a = neg ? -v : v;
  const bits = a.toString(2).length;
  const drop = Math.max(0, bits - 60);
  const m = Number(a >> BigInt(drop)); // < 2^60, rounded once to 53 bits
  const r = m * 2 ** (drop - Number(FRAC));
  return neg ? -r : r;
}

function mul(a: bigint, b: bigint): bigint {
  return (a * b) >> FRAC;
}

function div(a: bigint, b: bigint): bigint {
  return (a << FRAC) / b;
}

function isqrt(n: bigint): bigint {
  if (n < 2n) return n;
  let x = 1n << BigInt(Math.ceil(n.toString(2).length / 2));
  for (;;) {
    const y = (x + n / x) >> 1n;
    if (y >= x) return x;
    x = y;
  }
}

/** atan(1/k) by its series (k > 1 integer). */
function atanInv(k: bigint): bigint {
  const k2 = k * k;
  let term = ONE / k;
  let sum = term;
  for (let n = 1n; term !== 0n; n++) {
    term /= k2;
    const t = term / (2n * n + 1n);
    sum += n % 2n === 1n ? -t : t;
  }
  return sum;
}

let constants: { pi: bigint; twoOverSqrtPi: bigint; invSqrt2: bigint } | null = null;

function consts() {
  if (!constants) {
    const pi = 16n * atanInv(5n) - 4n * atanInv(239n); // Machin
    const sqrtPi = isqrt(pi << FRAC);
    constants = { pi, twoOverSqrtPi: div(2n * ONE, sqrtPi), invSqrt2: isqrt(ONE << (FRAC - 1n)) };
  }
  return constants;
}

/** exp of a fixed-point value: Taylor of x / 2^12, squared 12 times. */
function expFixed(x: bigint): bigint {
  const r = x >> 12n;
  let term = ONE;
  let sum = ONE;
  for (let n = 1n; term !== 0n; n++) {
    term = mul(term, r) / n;
    sum += term;
  }
  for (let i = 0; i < 12; i++) sum = mul(sum, sum);
  return sum;
}

/** erf of a fixed-point value by its Maclaurin series (exact arithmetic absorbs the cancellation). */
function erfFixed(z: bigint): bigint {
  const z2 = mul(z, z);
  let term = z; // (−1)^n z^(2n+1) / n!
  let sum = z;
  for (let n = 1n; term !== 0n; n++) {
    term = -mul(term, z2) / n;
    sum += term / (2n * n + 1n);
  }
  return mul(consts().twoOverSqrtPi, sum);
}

function checkRange(what: string, x: number, lo: number, hi: number): void {
  if (!(x >= lo && x <= hi)) throw new Error(`exact oracle: ${what}(${x}) outside [${lo}, ${hi}]`);
}

/** e^x for −110 <= x <= 89. */
export function exactExp(x: number): number {
  checkRange('exp', x, -110, 89);
  return toNumber(expFixed(toFixed(x)));
}

/** erf(x) for |x| <= 12. */
export function exactErf(x: number): number {
  checkRange('erf', x, -12, 12);
  return toNumber(erfFixed(toFixed(x)));
}

/** erfc(x) = 1 − erf(x) for |x| <= 12 (relative precision kept in the right tail). */
export function exactErfc(x: number): number {
  checkRange('erfc', x, -12, 12);
  return toNumber(ONE - erfFixed(toFixed(x)));
}

/** Exact GELU 0.5·x·(1 + erf(x/√2)) for |x| <= 16. */
export function exactGelu(x: number): number {
  checkRange('gelu', x, -16, 16);
  const xf = toFixed(x);
  const z = mul(xf, consts().invSqrt2);
  return toNumber(mul(xf >> 1n, ONE + erfFixed(z)));
}
