// Launchers of the Llama family's fused kernels: residual add + RMSNorm (shaders/fused/add_rmsnorm.wgsl) and the
// gate/up GEMM with the SwiGLU epilogue (shaders/fused/linear_swiglu.wgsl, on the shared GEMM cores of
// fused-linear.ts). GQA in the flash attention is an option of flash-attention.ts.
import type { BufferRef, KernelDef } from '../gpu/pipelines';
import type { DispatchSpec } from '../gpu/program';
import { dispatchOf, kernelOf } from './define';
import { type GemmOpts, gemmKernels, gemmSpecs } from './fused-linear';
import { fusedNormMaxD, type NormOpts } from './fused-norm';
import { rowGroups } from './grid';

export const addRmsNormKernel = kernelOf(
  'fused/add_rmsnorm',
  ['common/precision.wgsl', 'common/row_stats.wgsl'],
  {
    a: 'read', // [rows, d]
    b: 'read', // [rows, d]
    w: 'read', // [d]
    r: 'rw', // [rows, d]
    y: 'rw', // [rows, d]
  },
);

const NORM_WG = 256;

/**
 * r = a + b; y = RMSNorm(r; w, eps) — a, b, r, y: [rows, d]; w: [d]. With `b: null` RMSNorm of a alone (the first
 * layer's input norm): b and r are not touched (`dummy` is bound for r). Faults: FAULT_EPS_OUTSIDE, and row_stats'
 * FAULT_EPS_SCALE and FAULT_REORDER.
 */
export function addRmsNorm(
  label: string,
  buf: {
    a: GPUBuffer;
    b: GPUBuffer | null;
    w: GPUBuffer;
    r: GPUBuffer | null;
    y: GPUBuffer;
    dummy: GPUBuffer;
  },
  rows: number,
  d: number,
  eps: number,
  opts: NormOpts = {},
): DispatchSpec {
  const max = fusedNormMaxD(opts.maxWorkgroupBytes);
  if (d > max)
    throw new Error(`${label}: fused RMSNorm supports d <= ${max} with this workgroup memory, got ${d}`);
  const add = buf.b !== null;
  if (add !== (buf.r !== null)) throw new Error(`${label}: the residual add needs both b and r (or neither)`);
  const constants = { WG: NORM_WG, ROW_MAX: Math.max(1, d), ADD: add, ...opts.constants };
  const buffers = { a: buf.a, b: buf.b ?? buf.a, w: buf.w, r: buf.r ?? buf.dummy, y: buf.y };
  return dispatchOf(label, addRmsNormKernel, constants, buffers, [rows, d, { f32: eps }], rowGroups(rows));
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
  return gemmSpecs(swigluPair, label, buf, own, M, 2 * F, K, [buf.b ? 1 : 0], opts.constants ?? {}, opts);
}
