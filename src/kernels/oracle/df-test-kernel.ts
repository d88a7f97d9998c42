// The double-float probe: evaluates a chosen df library operation elementwise on the GPU (tests and the
// adapter self-test). WGSL: shaders/oracle/df_probe.wgsl.
import type { KernelDef } from '../../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../../gpu/program';
import { grid1d, type KernelOpts } from '../grid';
import { DF_MATH_INCLUDES } from './df-common';

/** The probe's operations; the number is the op code the kernel reads per element. */
export const DF_OP_CODES = {
  two_sum: 0,
  two_prod: 1,
  add: 2,
  sub: 3,
  mul: 4,
  div: 5,
  sqrt: 6,
  rsqrt: 7,
  exp: 8,
  erf: 9,
  erfc: 10,
  gelu: 11,
  add_f: 12,
  mul_f: 13,
  fast_two_sum: 14,
} as const;

export type DfOp = keyof typeof DF_OP_CODES;

/** Ops that read only a (b is ignored). */
export const DF_UNARY: ReadonlySet<DfOp> = new Set<DfOp>(['sqrt', 'rsqrt', 'exp', 'erf', 'erfc', 'gelu']);
/** Ops that use only the hi part of their operands (f32 in, df out: the error-free transforms). */
export const DF_EFT: ReadonlySet<DfOp> = new Set<DfOp>(['two_sum', 'two_prod', 'fast_two_sum']);

export const dfProbeKernel: KernelDef = {
  name: 'oracle/df_probe',
  file: 'oracle/df_probe.wgsl',
  includes: DF_MATH_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'op', kind: 'read' }, // [n] u32 op codes
    { name: 'a', kind: 'read' }, // [n] df
    { name: 'b', kind: 'read' }, // [n] df
    { name: 'y', kind: 'rw' }, // [n] df
  ],
};

const WG = 64;

export interface DfProbeOpts extends KernelOpts {
  /** TwoProd through `fma` (true) or Dekker's split product (false): the DF_FMA override. */
  dfFma: boolean;
  /** Deliberately broken library variants for tests (DF_BREAK in df.wgsl); 0 = none. */
  dfBreak?: number;
  /** Compile only the error-free transforms (two_sum, two_prod, fast_two_sum; other ops give NaN): fast. */
  eftOnly?: boolean;
}

/** y[i] = op[i](a[i], b[i]) in df — op: [n] u32 codes (DF_OP_CODES), a, b, y: [n] df pairs. */
export function dfProbe(
  label: string,
  b: { op: GPUBuffer; a: GPUBuffer; b: GPUBuffer; y: GPUBuffer },
  n: number,
  opts: DfProbeOpts,
): DispatchSpec {
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`${label}: element count must be a positive integer, got ${n}`);
  return {
    label,
    kernel: dfProbeKernel,
    constants: {
      WG,
      DF_FMA: opts.dfFma,
      DF_BREAK: opts.dfBreak ?? 0,
      PROBE_ALL: !opts.eftOnly,
      ...opts.constants,
    },
    buffers: b,
    params: paramsBytes([n]),
    workgroups: grid1d(n, WG),
  };
}

/** One probe case: an op and its operands as df pairs [hi, lo] (b unused by unary ops). */
export interface DfCase {
  op: DfOp;
  a: readonly [number, number];
  b: readonly [number, number];
}

/** The probe's three input arrays for a list of cases. */
export function packDfCases(cases: readonly DfCase[]): { op: Uint32Array; a: Float32Array; b: Float32Array } {
  const op = new Uint32Array(cases.length);
  const a = new Float32Array(2 * cases.length);
  const b = new Float32Array(2 * cases.length);
  cases.forEach((c, i) => {
    op[i] = DF_OP_CODES[c.op];
    a[2 * i] = c.a[0];
    a[2 * i + 1] = c.a[1];
    b[2 * i] = c.b[0];
    b[2 * i + 1] = c.b[1];
  });
  return { op, a, b };
}
