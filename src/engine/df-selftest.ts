// The double-float self-test, run on the user's adapter before the GPU oracle is trusted there: the error-free
// transforms with TwoProd through `fma` and through Dekker's split, then every df operation and function on a
// fixed adversarial input set (df-selftest-cases.ts) against f64 values computed here on the CPU.
//
// DF_FMA is chosen here: true only where TwoProd through `fma` is exact on this adapter (a fused fma; SwiftShader's
// is not), otherwise the Dekker form, which must then be exact. A result passes when it is within
// SELF_TEST_REL of the f64 value (relative), or, for exp/erf/erfc/gelu, within 2^-125 absolute where the result's
// lo part lies under the smallest normal f32 (GPUs flush it: the df format ends there); the error-free transforms
// must be exact. The library's measured worst on SwiftShader is ~5·2^-48 = 2e-14 (src/kernels/oracle/df.test.ts),
// a broken library (a lost lo part, a constant folded by the compiler, a non-fused fma) is off by >= 1e-9.
import type { PipelineCache } from '../gpu/pipelines';
import { Program } from '../gpu/program';
import { recordReadback, uploadBuffer } from '../gpu/readback';
import { dfReference, eftExact } from '../kernels/oracle/df-reference';
import { type DfCase, dfProbe, packDfCases } from '../kernels/oracle/df-test-kernel';
import { selfTestDfCases, selfTestEftCases } from './df-selftest-cases';

export interface DfSelfTestResult {
  /** Every case within its bound, with the chosen DF_FMA. */
  ok: boolean;
  /** Whether the oracle's kernels should run with DF_FMA = true (fma is fused and exact here). */
  dfFma: boolean;
  /** The largest |got − want| / max(|want|, floor) over the checked cases (floor: the absolute bound / REL). */
  worstRelErr: number;
  /** One line per failing op and input. */
  failures: string[];
  /** Wall time of the whole self-test, pipeline compilation included. */
  ms: number;
}

export interface DfSelfTestOptions {
  /** A deliberately broken library (DF_BREAK in shaders/oracle/df.wgsl) — for the test that this can fail. */
  dfBreak?: number;
}

/** Relative bound of every non-exact case (28·2^-48: 5× the library's measured worst, 1e4× under a broken one). */
export const SELF_TEST_REL = 1e-13;
/** Absolute bound where a df result's lo part is under the smallest normal f32 (exp, erf, erfc, gelu). */
export const SELF_TEST_ABS = 2 ** -125;

const ABS_OPS = new Set(['exp', 'erf', 'erfc', 'gelu']);

function fmtDf(p: readonly [number, number]): string {
  return p[1] === 0 ? `${p[0]}` : `${p[0]}+${p[1]}`;
}

function describeCase(c: DfCase): string {
  const unary = ['sqrt', 'rsqrt', 'exp', 'erf', 'erfc', 'gelu'].includes(c.op);
  return `${c.op}(${fmtDf(c.a)}${unary ? '' : `, ${fmtDf(c.b)}`})`;
}

/** Runs the probe over `cases` once per variant in one submit; returns each variant's (hi, lo) results. */
async function runProbe(
  device: GPUDevice,
  pipelines: PipelineCache,
  cases: DfCase[],
  variants: Array<{ dfFma: boolean; eftOnly: boolean }>,
  dfBreak: number,
): Promise<Float32Array[]> {
  const p = packDfCases(cases);
  const n = cases.length;
  const op = uploadBuffer(device, p.op, 'df-selftest.op');
  const a = uploadBuffer(device, p.a, 'df-selftest.a');
  const b = uploadBuffer(device, p.b, 'df-selftest.b');
  const ys = variants.map(() =>
    uploadBuffer(device, new Float32Array(2 * n).fill(Number.NaN), 'df-selftest.y'),
  );
  const program = new Program(device, pipelines);
  try {
    variants.forEach((v, i) => {
      program.add(dfProbe(`df-selftest.${i}`, { op, a, b, y: ys[i] }, n, { ...v, dfBreak }));
    });
    const encoder = device.createCommandEncoder({ label: 'df-selftest' });
    program.encode(encoder);
    const finish = recordReadback(
      device,
      encoder,
      ys.map((y) => ({ src: y, bytes: 8 * n })),
    );
    device.queue.submit([encoder.finish()]);
    return await finish();
  } finally {
    program.dispose();
    for (const buf of [op, a, b, ...ys]) buf.destroy();
  }
}

interface Checked {
  worst: number;
  failures: string[];
}

function checkEfts(cases: DfCase[], y: Float32Array, dfFma: boolean): Checked {
  const failures: string[] = [];
  let worst = 0;
  cases.forEach((c, i) => {
    const s = y[2 * i];
    const e = y[2 * i + 1];
    if (eftExact(c.op, c.a[0], c.b[0], s, e)) return;
    const want = dfReference(c.op, c.a, c.b);
    const rel = Math.abs(s + e - want) / Math.max(Math.abs(want), Number.MIN_VALUE);
    worst = Math.max(worst, Number.isNaN(rel) ? Number.POSITIVE_INFINITY : rel);
    failures.push(`${describeCase(c)} [DF_FMA=${dfFma}]: got (${s}, ${e}), not exact (want ${want})`);
  });
  return { worst, failures };
}

function checkOps(cases: DfCase[], y: Float32Array, dfFma: boolean): Checked {
  const failures: string[] = [];
  let worst = 0;
  cases.forEach((c, i) => {
    const got = y[2 * i] + y[2 * i + 1];
    const want = dfReference(c.op, c.a, c.b);
    const floor = ABS_OPS.has(c.op) ? SELF_TEST_ABS / SELF_TEST_REL : Number.MIN_VALUE;
    const rel = Math.abs(got - want) / Math.max(Math.abs(want), floor);
    const r = Number.isFinite(got) || got === want ? rel : Number.POSITIVE_INFINITY;
    worst = Math.max(worst, Number.isNaN(r) ? Number.POSITIVE_INFINITY : r);
    if (!(r <= SELF_TEST_REL))
      failures.push(
        `${describeCase(c)} [DF_FMA=${dfFma}]: got ${got}, want ${want}, relative error ${r.toExponential(2)} > ${SELF_TEST_REL}`,
      );
  });
  return { worst, failures };
}

/** Runs the self-test on this device (two submits: the EFTs, then the whole library with the chosen DF_FMA). */
export async function dfSelfTest(
  device: GPUDevice,
  pipelines: PipelineCache,
  opts: DfSelfTestOptions = {},
): Promise<DfSelfTestResult> {
  const t0 = performance.now();
  const dfBreak = opts.dfBreak ?? 0;
  const done = (r: Omit<DfSelfTestResult, 'ms'>): DfSelfTestResult => ({ ...r, ms: performance.now() - t0 });
  device.pushErrorScope('validation');
  let gpuError: string | null = null;
  let result: DfSelfTestResult;
  try {
    const efts = selfTestEftCases();
    const [withFma, withDekker] = await runProbe(
      device,
      pipelines,
      efts,
      [
        { dfFma: true, eftOnly: true },
        { dfFma: false, eftOnly: true },
      ],
      dfBreak,
    );
    const fmaCheck = checkEfts(efts, withFma, true);
    const dekkerCheck = checkEfts(efts, withDekker, false);
    const dfFma = fmaCheck.failures.length === 0;
    if (!dfFma && dekkerCheck.failures.length > 0) {
      result = done({
        ok: false,
        dfFma: false,
        worstRelErr: Math.min(fmaCheck.worst, dekkerCheck.worst),
        failures: [...dekkerCheck.failures, ...fmaCheck.failures],
      });
    } else {
      const ops = selfTestDfCases();
      const [y] = await runProbe(device, pipelines, ops, [{ dfFma, eftOnly: false }], dfBreak);
      const opCheck = checkOps(ops, y, dfFma);
      const eftCheck = dfFma ? fmaCheck : dekkerCheck;
      result = done({
        ok: opCheck.failures.length === 0 && eftCheck.failures.length === 0,
        dfFma,
        worstRelErr: Math.max(opCheck.worst, eftCheck.worst),
        failures: [...eftCheck.failures, ...opCheck.failures],
      });
    }
  } finally {
    const err = await device.popErrorScope();
    if (err) gpuError = err.message;
  }
  if (gpuError !== null)
    return {
      ...result,
      ok: false,
      failures: [`WebGPU error during the self-test: ${gpuError}`, ...result.failures],
    };
  return result;
}
