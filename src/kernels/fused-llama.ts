// Launchers of the Llama family's fused kernels: residual add + RMSNorm (shaders/fused/add_rmsnorm.wgsl) and the
// gate/up GEMM with the SwiGLU epilogue (shaders/fused/linear_swiglu.wgsl, on the shared GEMM cores of
// fused-linear.ts), and the q/k/v projection with the head split and the rotary in one GEMM (qkv_rope.wgsl). GQA in
// the flash attention is an option of flash-attention.ts.
import type { BufferRef, KernelDef, OverrideConstants } from '../gpu/pipelines';
import type { DispatchSpec } from '../gpu/program';
import { dispatchOf, kernelOf } from './define';
import { type GemmOpts, gemmKernels, gemmSpecs } from './fused-linear';
import { fusedNormMaxD, type NormOpts } from './fused-norm';
import { rowGroups } from './grid';
import { type KvPositions, kvPositions } from './positions';

export const addRmsNormKernel = kernelOf(
  'fused/add_rmsnorm',
  ['common/precision.wgsl', 'common/row_stats.wgsl', 'common/rms_row.wgsl'],
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
 * A fused RMSNorm dispatch (add_rmsnorm.wgsl, add_rmsnorm_fold.wgsl): one workgroup per row of d, params [rows, d, eps,
 * ...more]; d past what the device's workgroup memory holds is refused before anything is recorded.
 */
export function rmsNormDispatch(
  label: string,
  kernel: KernelDef,
  [rows, d, eps]: [number, number, number],
  opts: NormOpts,
  constants: OverrideConstants,
  buffers: DispatchSpec['buffers'],
  more: number[] = [],
): DispatchSpec {
  const max = fusedNormMaxD(opts.maxWorkgroupBytes);
  if (d > max)
    throw new Error(`${label}: fused RMSNorm supports d <= ${max} with this workgroup memory, got ${d}`);
  const all = { WG: NORM_WG, ROW_MAX: Math.max(1, d), ...constants, ...opts.constants };
  return dispatchOf(label, kernel, all, buffers, [rows, d, { f32: eps }, ...more], rowGroups(rows));
}

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
  const add = buf.b !== null;
  if (add !== (buf.r !== null)) throw new Error(`${label}: the residual add needs both b and r (or neither)`);
  const buffers = { a: buf.a, b: buf.b ?? buf.a, w: buf.w, r: buf.r ?? buf.dummy, y: buf.y };
  return rmsNormDispatch(label, addRmsNormKernel, [rows, d, eps], opts, { ADD: add }, buffers);
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

const qkvRopePair = gemmKernels('qkv_rope', 'fused/qkv_rope.wgsl', [
  { name: 'b', kind: 'read' }, // [(H + 2KV)·hd]
  { name: 'cos', kind: 'read' }, // [>= p0 + T, r/2]
  { name: 'sin', kind: 'read' }, // [>= p0 + T, r/2]
  { name: 'q', kind: 'rw' }, // [H, T, hd]
  { name: 'k', kind: 'rw' }, // [KV, rows, hd]
  { name: 'v', kind: 'rw' }, // [KV, rows, hd]
]); // then x [T, d], w [(H + 2KV)·hd, d]

export const qkvRopeKernel: KernelDef = qkvRopePair.gemm;

/** The buffers of the fused q/k/v projection + rotary: W and b concatenated [q; k; v]. */
export interface QkvRopeBuffers {
  x: GPUBuffer; // [T, K]
  w: BufferRef; // [(H + 2KV)·hd, K] = [q_proj.weight; k_proj.weight; v_proj.weight]
  b: GPUBuffer | null; // [(H + 2KV)·hd]; null: no biases
  cos: GPUBuffer; // [>= p0 + T, r/2] (rope.ts ropeTables)
  sin: GPUBuffer;
  q: GPUBuffer; // [H, T, hd]
  k: GPUBuffer; // [KV, rows, hd]
  v: GPUBuffer; // [KV, rows, hd]
  dummy: GPUBuffer;
}

/**
 * q/k/v projection + biases + head split + rotate-half over the first r dims of q and k, in one GEMM over the
 * concatenated weight: x [T, K] -> q [H, T, hd], k, v [KV, rows, hd] (rows = T in a whole forward; with `at`,
 * KV-cache decoding, rows at.p0.. of the cache). Split-K as the linear kernels. Fault: FAULT_GPTJ_ROTARY.
 */
export function qkvRopeOps(
  label: string,
  buf: QkvRopeBuffers,
  shape: { T: number; K: number; H: number; KV: number; hd: number; r: number },
  opts: GemmOpts = {},
  at?: KvPositions,
): DispatchSpec[] {
  const { T, K, H, KV, hd, r } = shape;
  const { p0, rows } = kvPositions(label, T, at);
  if (r < 0 || r > hd || r % 2 !== 0)
    throw new Error(`${label}: rotary dims ${r} must be even and within [0, ${hd}]`);
  const N = (H + 2 * KV) * (hd + (hd % 2));
  const own = { b: buf.b ?? buf.dummy, cos: buf.cos, sin: buf.sin, q: buf.q, k: buf.k, v: buf.v };
  return gemmSpecs(qkvRopePair, label, buf, own, T, N, K, [H, KV, hd, r, buf.b ? 1 : 0, p0, rows], {}, opts);
}
