// The SwiGLU product (`swiglu`: silu(gate) · up, the Llama MLP between its gate/up and down projections; HF LlamaMLP
// with hidden_act 'silu'): every form the registry holds of it, from this one file. The WGSL reference launcher
// (shaders/reference/swiglu.wgsl) and the double-float one (shaders/oracle/swiglu.wgsl) are here; the fp64 oracle is
// kernels/cpu/swiglu.ts; its fused kernel, the gate/up GEMM with the SwiGLU epilogue (switch `linear_gelu`,
// shaders/fused/linear_swiglu.wgsl), is launched by kernels/fused-llama.ts.

import type { DispatchSpec } from '../../gpu/program';
import type { Fp64Form } from '../../ops/types';
import { swigluF64 } from '../cpu/swiglu';
import { dispatch1d, elementwise, kernelOf } from '../define';
import { linearSwigluOps } from '../fused-llama';
import type { KernelOpts } from '../grid';
import { DF_MATH_INCLUDES, dfParam } from '../oracle/df-common';
import { type DfForm, dfRows } from '../oracle/df-form';
import { type OpModule, type WgslForm, wgslOpts } from './forms';

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

const fp64: Fp64Form = (a) => swigluF64(a.inputs[0], a.inputs[1]);

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

export const SWIGLU: OpModule = {
  kind: 'swiglu',
  fp64,
  wgsl,
  df,
  fused: { linear_gelu: { linearSwigluOps } },
};
