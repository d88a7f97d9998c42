// The fused path's linear kernels: one shared GEMM core (shaders/common/gemm_core.wgsl) with a small epilogue
// per kernel (shaders/fused/*.wgsl). Convention: y[M, N] = x[M, K] · W[N, K]^T (nn.Linear layout).
// `opts.constants` is merged into the pipeline constants: precision ({ STORAGE_PREC, ACC_F16 }), fault
// switches, or tile overrides (BM, BN, BK, TM, TN, GEMM_BUFS, GEMM_SWIZZLE; see gemm.ts).
import type { BufferRef, KernelDef, OverrideConstants } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import { gemmConstants, gemmWorkgroups } from './gemm';
import { type KvPositions, kvPositions } from './positions';

export interface GemmOpts {
  constants?: OverrideConstants;
}

const GEMM_INCLUDES = ['common/precision.wgsl', 'common/weights.wgsl', 'common/gemm_core.wgsl'] as const;

export const linearBiasKernel: KernelDef = {
  name: 'fused/linear_bias',
  file: 'fused/linear_bias.wgsl',
  includes: GEMM_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'x', kind: 'read' }, // [M, K]
    { name: 'w', kind: 'read' }, // [N, K]
    { name: 'b', kind: 'read' }, // [N]
    { name: 'y', kind: 'rw' }, // [M, N]
  ],
};

export const linearGeluKernel: KernelDef = {
  name: 'fused/linear_gelu',
  file: 'fused/linear_gelu.wgsl',
  includes: [...GEMM_INCLUDES, 'common/gelu.wgsl'],
  bindings: linearBiasKernel.bindings, // x [M, K], w [N, K], b [N], y [M, N]
};

export const linearResidualKernel: KernelDef = {
  name: 'fused/linear_residual',
  file: 'fused/linear_residual.wgsl',
  includes: GEMM_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'x', kind: 'read' }, // [M, K]
    { name: 'w', kind: 'read' }, // [N, K]
    { name: 'b', kind: 'read' }, // [N]
    { name: 'r1', kind: 'read' }, // [M, N] hidden_states
    { name: 'r2', kind: 'read' }, // [M, N] attn_output
    { name: 'y', kind: 'rw' }, // [M, N]
  ],
};

export const qkvRotaryKernel: KernelDef = {
  name: 'fused/qkv_rotary',
  file: 'fused/qkv_rotary.wgsl',
  includes: GEMM_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'x', kind: 'read' }, // [T, d]
    { name: 'w', kind: 'read' }, // [3d, d] = [H, 3, hd, d]
    { name: 'b', kind: 'read' }, // [3d] = [H, 3, hd]
    { name: 'cos', kind: 'read' }, // [>= p0 + T, r/2]
    { name: 'sin', kind: 'read' }, // [>= p0 + T, r/2]
    { name: 'q', kind: 'rw' }, // [H, T, hd]
    { name: 'k', kind: 'rw' }, // [H, rows, hd] (rows = T in a whole forward)
    { name: 'v', kind: 'rw' }, // [H, rows, hd]
  ],
};

export const FUSED_LINEAR_KERNELS: readonly KernelDef[] = [
  linearBiasKernel,
  linearGeluKernel,
  linearResidualKernel,
  qkvRotaryKernel,
];

interface LinearBuffers {
  x: GPUBuffer; // [M, K]
  w: BufferRef; // [N, K] (a buffer or a range of one)
  b: GPUBuffer | null; // [N]; null: no bias (the dummy is bound)
  y: GPUBuffer; // [M, N]
  dummy: GPUBuffer;
}

function linearSpec(
  kernel: KernelDef,
  label: string,
  buf: LinearBuffers,
  M: number,
  N: number,
  K: number,
  opts: GemmOpts,
): DispatchSpec {
  const { constants, tiles } = gemmConstants(M, N, opts.constants);
  return {
    label,
    kernel,
    constants,
    buffers: { x: buf.x, w: buf.w, b: buf.b ?? buf.dummy, y: buf.y },
    params: paramsBytes([M, N, K, buf.b ? 1 : 0]),
    workgroups: gemmWorkgroups(M, N, tiles),
  };
}

/** y[M, N] = x[M, K] · W[N, K]^T (+ b[N]); `b: null` for none (the LM head). */
export function linearBias(
  label: string,
  buf: LinearBuffers,
  M: number,
  N: number,
  K: number,
  opts: GemmOpts = {},
): DispatchSpec {
  return linearSpec(linearBiasKernel, label, buf, M, N, K, opts);
}

/** y[M, N] = gelu_exact(x[M, K] · W[N, K]^T + b[N]) (the MLP up-projection and its activation). */
export function linearGelu(
  label: string,
  buf: LinearBuffers,
  M: number,
  N: number,
  K: number,
  opts: GemmOpts = {},
): DispatchSpec {
  return linearSpec(linearGeluKernel, label, buf, M, N, K, opts);
}

/**
 * y[M, N] = ((x·W^T + b) + r2) + r1 (parallel residual, HF `mlp_output + attn_output + hidden_states`,
 * r1 = hidden_states, r2 = attn_output) or, with `r2: null`, (x·W^T + b) + r1 (sequential residual).
 * Faults: FAULT_WIRING (r2 twice, r1 dropped), FAULT_DROP_BIAS.
 */
export function linearResidual(
  label: string,
  buf: {
    x: GPUBuffer; // [M, K]
    w: BufferRef; // [N, K] (a buffer or a range of one)
    b: GPUBuffer | null; // [N]
    r1: GPUBuffer; // [M, N]
    r2: GPUBuffer | null; // [M, N]
    y: GPUBuffer; // [M, N]
    dummy: GPUBuffer;
  },
  M: number,
  N: number,
  K: number,
  opts: GemmOpts = {},
): DispatchSpec {
  const { constants, tiles } = gemmConstants(M, N, { RESIDUALS: buf.r2 ? 2 : 1, ...opts.constants });
  return {
    label,
    kernel: linearResidualKernel,
    constants,
    buffers: { x: buf.x, w: buf.w, b: buf.b ?? buf.dummy, r1: buf.r1, r2: buf.r2 ?? buf.dummy, y: buf.y },
    params: paramsBytes([M, N, K, buf.b ? 1 : 0]),
    workgroups: gemmWorkgroups(M, N, tiles),
  };
}

/**
 * QKV projection + bias + head split + partial rotary in one kernel: x [T, d] (d = H·hd), W [3d, d] and
 * b [3d] in HF's fused layout [H, 3, hd], cos/sin [T, r/2] (rotaryTables) -> q, k, v each [H, T, hd], the
 * first r dims of q and k rotated (rotate-half). The GEMM runs over 3·H·hdE permuted columns (hdE = hd
 * rounded up to even; see shaders/fused/qkv_rotary.wgsl). Fault: FAULT_GPTJ_ROTARY. With `at` (KV-cache
 * decoding) the rows are the tokens at positions at.p0.. and k, v go to rows at.p0.. of [H, at.rows, hd].
 */
export function qkvRotary(
  label: string,
  buf: {
    x: GPUBuffer; // [T, d]
    w: GPUBuffer; // [3d, d]
    b: GPUBuffer | null; // [3d]
    cos: GPUBuffer; // [>= p0 + T, r/2]
    sin: GPUBuffer; // [>= p0 + T, r/2]
    q: GPUBuffer; // [H, T, hd]
    k: GPUBuffer; // [H, rows, hd]
    v: GPUBuffer; // [H, rows, hd]
    dummy: GPUBuffer;
  },
  T: number,
  H: number,
  hd: number,
  r: number,
  opts: GemmOpts = {},
  at?: KvPositions,
): DispatchSpec {
  const { p0, rows } = kvPositions(label, T, at);
  if (r < 0 || r > hd || r % 2 !== 0)
    throw new Error(`${label}: rotary dims ${r} must be even and within [0, ${hd}]`);
  const d = H * hd;
  const virtualCols = 3 * H * (hd + (hd % 2));
  const { constants, tiles } = gemmConstants(T, virtualCols, opts.constants);
  return {
    label,
    kernel: qkvRotaryKernel,
    constants,
    buffers: {
      x: buf.x,
      w: buf.w,
      b: buf.b ?? buf.dummy,
      cos: buf.cos,
      sin: buf.sin,
      q: buf.q,
      k: buf.k,
      v: buf.v,
    },
    params: paramsBytes([T, H, hd, r, d, buf.b ? 1 : 0, p0, rows]),
    workgroups: gemmWorkgroups(T, virtualCols, tiles),
  };
}
