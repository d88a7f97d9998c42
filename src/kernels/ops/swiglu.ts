// The SwiGLU product (`swiglu`: silu(gate) · up, the Llama MLP between its gate/up and down projections; HF LlamaMLP
// with hidden_act 'silu': ACT2FN['silu'] = torch.nn.functional.silu, x · sigmoid(x)): every form the registry holds
// of it, from this one file: its fp64 oracle, the WGSL reference launcher (shaders/reference/swiglu.wgsl) and the
// double-float one (shaders/oracle/swiglu.wgsl). Its fused kernel, the gate/up GEMM with the SwiGLU epilogue
// (switch `linear_gelu`, shaders/fused/linear_swiglu.wgsl, on the shared GEMM cores of fused-linear.ts), is launched
// here too. The gate and up projections (`gate_up`) are the second op kind of this file: a linear like the others,
// whose fused kernel is that same GEMM. And the SwiGLU's causes (the why's variants of it: gate and up swapped,
// another activation in SiLU's place), each a variant its fp64 form takes.

import type { BufferRef, KernelDef } from '../../gpu/pipelines';
import type { DispatchSpec } from '../../gpu/program';
import type { CausesForm, CauseVariant, Fp64Form } from '../../ops/types';
import { gelu } from '../cpu/gelu';
import { dispatch1d, elementwise, kernelOf } from '../define';
import { type GemmOpts, gemmKernels, gemmSpecs } from '../fused-linear';
import type { KernelOpts } from '../grid';
import { DF_MATH_INCLUDES, dfParam } from '../oracle/df-common';
import { type DfForm, dfLinearForm, dfRows } from '../oracle/df-form';
import { fp64Linear, type OpModule, type WgslForm, wgslLinearForm, wgslOpts } from './forms';

/** silu(x) = x · sigmoid(x) = x / (1 + e^-x) of one value; e^-x overflowing for x < -709 gives -0 (the limit). */
export function silu(x: number): number {
  return x / (1 + Math.exp(-x));
}

/** Elementwise silu. */
export function siluF64(x: ArrayLike<number>): Float64Array {
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = silu(x[i]);
  return out;
}

/** The ways a SwiGLU is miswritten (its causes): gate and up swapped, another activation in SiLU's place. */
export interface SwigluVariant {
  /** silu(up) · gate. */
  swap?: boolean;
  /** GELU (erf, kernels/cpu/gelu.ts), its tanh approximation, or ReLU on the gate. */
  act?: 'gelu' | 'gelu-tanh' | 'relu';
}

const relu = (x: number) => Math.max(0, x);

/** gelu_tanh(x) = 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³))), without the final product. */
function geluTanh(x: number): number {
  const c = Math.sqrt(2 / Math.PI);
  return 0.5 * x * (1 + Math.tanh(c * (x + 0.044715 * x * x * x)));
}

/** gate, up [rows, f] -> [rows, f]: silu(gate) · up, elementwise (a cause's variant: its way). */
export function swigluF64(
  gate: ArrayLike<number>,
  up: ArrayLike<number>,
  v: SwigluVariant = {},
): Float64Array {
  if (gate.length !== up.length)
    throw new Error(`swigluF64: gate has ${gate.length} values and up ${up.length}; they must match`);
  const [g, u] = v.swap ? [up, gate] : [gate, up];
  const act = v.act === 'gelu' ? gelu : v.act === 'relu' ? relu : v.act === 'gelu-tanh' ? geluTanh : silu;
  const out = new Float64Array(g.length);
  for (let i = 0; i < g.length; i++) out[i] = act(g[i]) * u[i];
  return out;
}

export const swigluKernel = kernelOf('reference/swiglu', ['common/precision.wgsl', 'common/silu.wgsl'], {
  gate: 'read', // [n]
  up: 'read', // [n]
  y: 'rw', // [n]
});

const WG = 256;

/** y = silu(gate) · up elementwise (the Llama MLP between its projections) — gate, up, y: [n]. */
export const swiglu = elementwise<{ gate: GPUBuffer; up: GPUBuffer; y: GPUBuffer }>(swigluKernel, WG);

export const dfSwigluKernel = kernelOf('oracle/swiglu', DF_MATH_INCLUDES, {
  gate: 'read', // [n] df
  up: 'read', // [n] df
  y: 'rw', // [n] df
});

/** y = silu(gate) · up elementwise in df — gate, up, y: [n]. */
export function dfSwiglu(
  label: string,
  b: { gate: GPUBuffer; up: GPUBuffer; y: GPUBuffer },
  n: number,
  opts: KernelOpts = {},
): DispatchSpec {
  return dispatch1d(label, dfSwigluKernel, WG, n, opts, b, [n, 0, ...dfParam(1)]);
}

const swigluPair = gemmKernels(
  'linear_swiglu',
  'fused/linear_swiglu.wgsl',
  [
    { name: 'b', kind: 'read' }, // [2F]
    { name: 'y', kind: 'rw' }, // [M, F]
  ],
  ['common/silu.wgsl'],
);

export const linearSwigluKernel: KernelDef = swigluPair.gemm;

/** The buffers of the gate/up GEMM: W and b concatenated [gate; up]. */
export interface SwigluBuffers {
  x: GPUBuffer; // [M, K]
  w: BufferRef; // [2F, K] = [gate_proj.weight; up_proj.weight]
  b: GPUBuffer | null; // [2F] = [gate_proj.bias; up_proj.bias]; null: none (Llama's mlp_bias false)
  y: GPUBuffer; // [M, F]
  dummy: GPUBuffer;
}

/**
 * y[M, F] = silu(x·Wg^T + bg) · (x·Wu^T + bu) from one GEMM over the concatenated [Wg; Wu] ([2F, K]). The
 * dispatches of one launch: one, or two when split-K (as fused-linear.ts linearBiasOps). Fault: FAULT_SWAP_GATE_UP.
 */
export function linearSwigluOps(
  label: string,
  buf: SwigluBuffers,
  M: number,
  F: number,
  K: number,
  opts: GemmOpts = {},
): DispatchSpec[] {
  const own = { b: buf.b ?? buf.dummy, y: buf.y };
  return gemmSpecs(swigluPair, label, buf, own, M, 2 * F, K, [buf.b ? 1 : 0], {}, opts);
}

const fp64: Fp64Form = (a) => swigluF64(a.inputs[0], a.inputs[1], a.variant as SwigluVariant);

const wgsl: WgslForm = (a) => [
  swiglu(
    a.label,
    { gate: a.inputs[0], up: a.inputs[1], y: a.out },
    a.T * a.cfg.intermediateSize,
    wgslOpts(a),
  ),
];

const df: DfForm = (a) => [
  dfSwiglu(a.label, { gate: a.inputs[0], up: a.inputs[1], y: a.out }, dfRows(a) * a.cfg.intermediateSize, {
    constants: a.df,
  }),
];

/** Its fused kernel's launchers under the switch id (the gate/up projections' too: GATE_UP below). */
export const SWIGLU_FUSED = { linear_gelu: { gemm: linearSwigluOps } } as const;

/** Gate and up swapped; GELU (erf or tanh) or ReLU in SiLU's place. */
const causes: CausesForm = () => [
  {
    id: 'swiglu-swapped',
    family: 'layout',
    words: 'gate and up are swapped: silu(up) · gate',
    params: {},
    variant: { swap: true },
  },
  ...(['gelu', 'relu'] as const).map(
    (act): CauseVariant => ({
      id: `swiglu-${act}`,
      family: 'function',
      words: `another activation on the gate: ${act === 'gelu' ? 'GELU' : 'ReLU'} in SiLU's place`,
      params: { act },
      variant: { act },
    }),
  ),
  {
    id: 'swiglu-gelu-tanh',
    family: 'function',
    words: "another activation on the gate: GELU's tanh approximation in SiLU's place",
    params: { act: 'gelu-tanh' },
    variant: { act: 'gelu-tanh' },
  },
];

export const SWIGLU: OpModule = { kind: 'swiglu', fp64, wgsl, df, fused: SWIGLU_FUSED, causes };

/** The gate and up projections (mlp.gate_proj, mlp.up_proj: x · W^T (+ b) into the intermediate size). */
export const GATE_UP: OpModule = {
  kind: 'gate_up',
  fp64: fp64Linear,
  wgsl: wgslLinearForm(
    (c) => c.hiddenSize,
    (c) => c.intermediateSize,
  ),
  df: dfLinearForm('hidden'),
  fused: SWIGLU_FUSED,
};
