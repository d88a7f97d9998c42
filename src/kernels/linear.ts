// The reference linear layer, y[M, N] = x[M, K] · W[N, K]^T (+ b[N]), in three kernels with one arithmetic:
// every output is one thread's sum over k in order (K padded to a multiple of 16 with 0·0), then + bias, then
// st() — so all three give the same bits. reference/linear.wgsl is the plain 16 × 16 tile (the definition);
// linear_blocked.wgsl gives each thread a 4 × 4 register tile (many rows: a forward, a prefill); linear_rows.wgsl
// stages NR weight rows with a whole workgroup and lets NR threads sum them (a few rows of a wide output: the
// LM head of a decode step). linear_plain.wgsl shares nothing and has no barrier (CPU adapters, where a barrier
// makes every invocation of a workgroup yield in turn). linear() picks by shape and adapter.
import type { BufferRef, KernelDef, OverrideConstants } from '../gpu/pipelines';
import type { DispatchSpec } from '../gpu/program';
import { dispatchOf, kernelOf } from './define';
import type { KernelOpts } from './grid';
import { ceilDiv, MAX_GROUPS } from './grid';

const includes = ['common/precision.wgsl', 'common/weights.wgsl', 'reference/linear_io.wgsl'];
const bindings = {
  x: 'read', // [M, K]
  w: 'read', // [N, K]
  b: 'read', // [N]
  y: 'rw', // [M, N]
} as const;

export const linearKernel = kernelOf('reference/linear', includes, bindings);
export const linearBlockedKernel = kernelOf('reference/linear_blocked', includes, bindings);
export const linearRowsKernel = kernelOf('reference/linear_rows', includes, bindings);
export const linearPlainKernel = kernelOf('reference/linear_plain', includes, bindings);

export type LinearBuffers = {
  x: GPUBuffer;
  w: BufferRef;
  b: GPUBuffer | null;
  y: GPUBuffer;
  dummy: GPUBuffer;
};

const TILE = 16;
/** Threads of a blocked workgroup (TX along N, TY along M); the block is 4·TY × 4·TX. */
export interface BlockedTile {
  TX: number;
  TY: number;
}
/** A rows workgroup: WG threads (≥ 64), NR output columns (≤ 32), KC of K per step (a multiple of 16). */
export interface RowsShape {
  WG: number;
  NR: number;
  KC: number;
}
/** Up to this many rows go to the rows kernel (a decode step; each row would re-read W). */
export const ROWS_MAX = 1;
/**
 * The rows kernel's shape for an N × K weight (measured: see linear()). Small weights (the test models) get small
 * workgroups: on a GPU such layers take microseconds either way. (CPU adapters run the plain kernel instead.)
 */
export function rowsShape(N: number, K: number): RowsShape {
  if (N * K < 1 << 18) return { WG: 64, NR: 8, KC: 32 };
  if (N >= 16384) return { WG: 256, NR: 32, KC: 48 };
  if (N <= 3072) return { WG: 256, NR: 8, KC: 224 };
  return { WG: 256, NR: 16, KC: 112 };
}
/** The blocked kernel's tile, used for at least BLOCKED_MIN_M rows when it gives BLOCKED_MIN_GROUPS workgroups. */
export const BLOCKED_DEFAULT: BlockedTile = { TX: 16, TY: 16 };
export const BLOCKED_MIN_GROUPS = 64;
/** Fewer rows would leave most of a 64-row block empty (and cost a CPU adapter 2× the 16 × 16 tile). */
export const BLOCKED_MIN_M = 32;

/** One of the three kernels on `buf` (no bias: the dummy is bound and the params say so). */
function dispatchLinear(
  label: string,
  kernel: KernelDef,
  constants: OverrideConstants,
  buf: LinearBuffers,
  [M, N, K]: [number, number, number],
  workgroups: DispatchSpec['workgroups'],
): DispatchSpec {
  const buffers = { x: buf.x, w: buf.w, b: buf.b ?? buf.dummy, y: buf.y };
  return dispatchOf(label, kernel, constants, buffers, [M, N, K, buf.b ? 1 : 0], workgroups);
}

/** A launcher of y[M, N] = x[M, K] · W[N, K]^T (+ b[N]) on `buf`. */
type LinearLauncher = (
  label: string,
  buf: LinearBuffers,
  M: number,
  N: number,
  K: number,
  opts?: KernelOpts,
) => DispatchSpec;

/** Threads of a plain workgroup (along N). */
const PLAIN_WG = 64;

/**
 * y[M, N] = x[M, K] · W[N, K]^T (+ b[N]); pass `b: null` for no bias (a dummy buffer is bound). `cpuAdapter`
 * (GemmPolicy.cpu): the plain kernel for every shape.
 */
export function linear(
  label: string,
  buf: LinearBuffers,
  M: number,
  N: number,
  K: number,
  opts: KernelOpts = {},
  cpuAdapter = false,
): DispatchSpec {
  // Measured on SwiftShader (2 cores, 2026-11-26): with one row the plain kernel takes 2.7 ms at 1024 × 256 where
  // the rows kernel takes 34 (64 threads) or 387 (256 threads) and the 16 × 16 tile 125; with 25 rows 19 ms against
  // the tile's 262 and the 4 × 4 register tile's 220 (with workgroup memory); with 128 rows 81 ms against 953.
  if (cpuAdapter) return linearPlain(label, buf, M, N, K, opts);
  // Measured on an H100 (bench/compare-speed.ts --kernels, Pythia 70m and 410m shapes, 2026-11-25): the 4 × 4
  // register tile wins where its 64 × 64 blocks still fill the GPU (qkv, fc1 and the LM head at T = 128: 1.8–4.5×)
  // and loses where they do not (attn_out, fc2: each thread's sum over K is a chain the 16 × 16 tile runs on
  // 16× more threads). With one row the rows kernel beats the 16 × 16 tile 2.5–6× (LM head 0.23 ms against 1.43
  // at 410m); its best shape depends on N (rowsShape).
  const gx = ceilDiv(N, 4 * BLOCKED_DEFAULT.TX);
  const gy = ceilDiv(M, 4 * BLOCKED_DEFAULT.TY);
  if (M <= ROWS_MAX) {
    const shape = rowsShape(N, K);
    if (ceilDiv(N, shape.NR) <= MAX_GROUPS) return linearRows(label, buf, M, N, K, shape, opts);
  } else if (M >= BLOCKED_MIN_M && gx * gy >= BLOCKED_MIN_GROUPS && gx <= MAX_GROUPS && gy <= MAX_GROUPS) {
    return linearBlocked(label, buf, M, N, K, BLOCKED_DEFAULT, opts);
  }
  return linearTiled(label, buf, M, N, K, opts);
}

/** The plain 16 × 16 tile kernel (the definition the other two are tested against). */
export const linearTiled: LinearLauncher = (label, buf, M, N, K, opts = {}) =>
  dispatchLinear(
    label,
    linearKernel,
    { TILE, ...opts.constants },
    buf,
    [M, N, K],
    [ceilDiv(N, TILE), ceilDiv(M, TILE), 1],
  );

/** The register-blocked kernel with a 4·TY × 4·TX block per workgroup. */
export function linearBlocked(
  label: string,
  buf: LinearBuffers,
  M: number,
  N: number,
  K: number,
  tile: BlockedTile,
  opts: KernelOpts = {},
): DispatchSpec {
  return dispatchLinear(
    label,
    linearBlockedKernel,
    { TX: tile.TX, TY: tile.TY, ...opts.constants },
    buf,
    [M, N, K],
    [ceilDiv(N, 4 * tile.TX), ceilDiv(M, 4 * tile.TY), 1],
  );
}

/** The barrier-free kernel: a thread per 4 × 4 block, PLAIN_WG of them along N per workgroup. */
export const linearPlain: LinearLauncher = (label, buf, M, N, K, opts = {}) =>
  dispatchLinear(
    label,
    linearPlainKernel,
    { WG: PLAIN_WG, ...opts.constants },
    buf,
    [M, N, K],
    [ceilDiv(ceilDiv(N, 4), PLAIN_WG), ceilDiv(M, 4), 1],
  );

/** The few-rows kernel: one workgroup per NR output columns of one row. */
export function linearRows(
  label: string,
  buf: LinearBuffers,
  M: number,
  N: number,
  K: number,
  shape: RowsShape,
  opts: KernelOpts = {},
): DispatchSpec {
  const words = 2 * shape.NR * (shape.KC + 1) + 2 * shape.KC;
  if (shape.KC % 16 !== 0 || shape.KC < 16 || shape.NR > 32 || shape.WG < 64 || words * 4 > 16384)
    throw new Error(
      `${label}: rows shape ${JSON.stringify(shape)} needs KC a multiple of 16, NR ≤ 32, WG ≥ 64 and at most 16 KiB of workgroup memory`,
    );
  return dispatchLinear(
    label,
    linearRowsKernel,
    { WG: shape.WG, NR: shape.NR, KC: shape.KC, ...opts.constants },
    buf,
    [M, N, K],
    [ceilDiv(N, shape.NR), M, 1],
  );
}
