// Launcher of the Llama family's q/k/v projection with the head split and the rotary in one GEMM
// (shaders/fused/qkv_rope.wgsl, on the shared GEMM cores of fused-linear.ts). GQA in the flash attention is an option
// of flash-attention.ts. The family's other fused kernels are launched from their ops' modules: the residual add +
// RMSNorm from kernels/ops/rmsnorm.ts, the gate/up GEMM with the SwiGLU epilogue from kernels/ops/swiglu.ts.

import type { BufferRef, KernelDef } from '../gpu/pipelines';
import type { DispatchSpec } from '../gpu/program';
import { type GemmOpts, gemmKernels, gemmSpecs } from './fused-linear';
import { type KvPositions, kvPositions } from './positions';
import { checkRotaryDims } from './rope';

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
  checkRotaryDims(label, r, hd);
  const N = (H + 2 * KV) * (hd + (hd % 2));
  const own = { b: buf.b ?? buf.dummy, cos: buf.cos, sin: buf.sin, q: buf.q, k: buf.k, v: buf.v };
  return gemmSpecs(qkvRopePair, label, buf, own, T, N, K, [H, KV, hd, r, buf.b ? 1 : 0, p0, rows], {}, opts);
}
