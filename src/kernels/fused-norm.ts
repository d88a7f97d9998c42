// Launchers of the fused LayerNorm kernels: dual LayerNorm (parallel residual) and residual add + LayerNorm.

import type { KernelDef, OverrideConstants } from '../gpu/pipelines';
import type { DispatchSpec } from '../gpu/program';
import { dispatchOf, kernelOf } from './define';
import type { KernelOpts } from './grid';

const includes = ['common/precision.wgsl', 'common/row_stats.wgsl'] as const;

/** The two norms' weights and outputs: the last bindings of both dual LayerNorm kernels. */
const DUAL_NORM = {
  w1: 'read', // [d]
  b1: 'read', // [d]
  w2: 'read', // [d]
  b2: 'read', // [d]
  y1: 'rw', // [rows, d]
  y2: 'rw', // [rows, d]
} as const;

export const layerNorm2Kernel = kernelOf('fused/layernorm2', includes, {
  x: 'read', // [rows, d]
  ...DUAL_NORM,
});

export const addLayerNormKernel = kernelOf('fused/add_layernorm', includes, {
  a: 'read', // [rows, d]
  b: 'read', // [rows, d]
  w: 'read', // [d]
  bias: 'read', // [d]
  r: 'rw', // [rows, d]
  y: 'rw', // [rows, d]
});

// addLayerNorm with attention.dense's split-K reduction folded in (src/engine/plan-fold.ts).
export const addLayerNormFoldKernel = kernelOf('fused/add_layernorm_fold', includes, {
  a: 'read', // [rows, d]
  dense_b: 'read', // [d]
  dense_part: 'read', // [S', rows, d]
  w: 'read', // [d]
  bias: 'read', // [d]
  attn: 'rw', // [rows, d]
  r: 'rw', // [rows, d]
  y: 'rw', // [rows, d]
});

// layerNorm2 with the previous layer's MLP down-projection reduction folded in (src/engine/plan-fold.ts).
export const layerNorm2FoldKernel = kernelOf('fused/layernorm2_fold', includes, {
  part: 'read', // both GEMMs' partials: [S, rows, d] and [S', rows, d]
  b: 'read', // [d]
  r1: 'read', // [rows, d]
  dense_b: 'read', // [d]
  attn: 'rw', // [rows, d]
  x: 'rw', // [rows, d]
  ...DUAL_NORM,
});

const WG = 256;
/** WebGPU's guaranteed workgroup memory; an adapter may offer more (an H100 through Dawn: 48 KiB). */
const DEFAULT_WORKGROUP_BYTES = 16384;

/** Largest d the row cache holds in `workgroupBytes` of workgroup memory (the row + the reduction's WG floats). */
export function fusedNormMaxD(workgroupBytes = DEFAULT_WORKGROUP_BYTES): number {
  return Math.floor((workgroupBytes - WG * 4) / 4);
}

/** Largest d on every adapter (16 KiB of workgroup memory). */
export const FUSED_NORM_MAX_D = fusedNormMaxD();

/** Options of the fused LayerNorm launchers: the device's workgroup memory sets the widest row. */
export interface NormOpts extends KernelOpts {
  maxWorkgroupBytes?: number;
}

/** The row, the first norm's weights and output, and the dummy bound for an absent second norm. */
type FirstNorm = { x: GPUBuffer; w1: GPUBuffer; b1: GPUBuffer; y1: GPUBuffer; dummy: GPUBuffer };

/** A fused norm launcher (the LayerNorms here, the RMSNorms of kernels/ops/rmsnorm.ts): buffers `B`, rows of d, eps. */
export type NormLauncher<B> = (
  label: string,
  b: B,
  rows: number,
  d: number,
  eps: number,
  opts?: NormOpts,
) => DispatchSpec;

/** A dual LayerNorm launcher: buffers `B`, the second norm's (null: one norm only), rows of d, eps. */
type DualNormLauncher<B> = (
  label: string,
  b: B,
  second: { w2: GPUBuffer; b2: GPUBuffer; y2: GPUBuffer } | null,
  rows: number,
  d: number,
  eps: number,
  opts?: NormOpts,
) => DispatchSpec;

/** A fused norm dispatch: label, kernel, [rows, d, eps], options, override constants, buffers, the params after eps. */
export type NormDispatch = (
  label: string,
  kernel: KernelDef,
  sizes: [number, number, number],
  opts: NormOpts,
  constants: OverrideConstants,
  buffers: DispatchSpec['buffers'],
  more?: number[],
) => DispatchSpec;

/**
 * The fused norm dispatch of a family (the LayerNorms here, the RMSNorms of kernels/ops/rmsnorm.ts): WG threads and a
 * row cache of d floats, one workgroup per row laid out by `grid`, params [rows, d, eps, ...more]; a d past what the
 * device's workgroup memory holds (fusedNormMaxD) is refused, in the words of `tooWide`, before anything is recorded.
 */
export function normDispatchOf(
  tooWide: (label: string, d: number, max: number, workgroupBytes?: number) => string,
  grid: (rows: number) => [number, number, number],
): NormDispatch {
  return (label, kernel, [rows, d, eps], opts, constants, buffers, more = []) => {
    const max = fusedNormMaxD(opts.maxWorkgroupBytes);
    if (d > max) throw new Error(tooWide(label, d, max, opts.maxWorkgroupBytes));
    const all = { WG, ROW_MAX: Math.max(1, d), ...constants, ...opts.constants };
    return dispatchOf(label, kernel, all, buffers, [rows, d, { f32: eps }, ...more], grid(rows));
  };
}

/** A fused LayerNorm dispatch: one workgroup per row along x. */
const normDispatch = normDispatchOf(
  (_, d, max, bytes) =>
    `fused LayerNorm supports d <= ${max} with ${bytes ?? DEFAULT_WORKGROUP_BYTES} bytes of workgroup memory, got ${d}`,
  (rows) => [rows, 1, 1],
);

/**
 * y1 = LN(x; w1, b1) and, when `second` is given, y2 = LN(x; w2, b2) from one read of each row.
 * x, y1, y2: [rows, d]; weights [d].
 */
export const layerNorm2: DualNormLauncher<FirstNorm> = (label, b, second, rows, d, eps, opts = {}) => {
  // Without a second norm its weights alias the first's and y2 is the dummy (never read or written).
  const buffers = {
    x: b.x,
    w1: b.w1,
    b1: b.b1,
    y1: b.y1,
    ...(second ?? { w2: b.w1, b2: b.b1, y2: b.dummy }),
  };
  return normDispatch(label, layerNorm2Kernel, [rows, d, eps], opts, { DUAL: second !== null }, buffers);
};

/** r = b + a; y = LN(r; w, bias) — a, b, r, y: [rows, d]; w, bias: [d]. */
export const addLayerNorm: NormLauncher<{
  a: GPUBuffer;
  b: GPUBuffer;
  w: GPUBuffer;
  bias: GPUBuffer;
  r: GPUBuffer;
  y: GPUBuffer;
}> = (label, b, rows, d, eps, opts = {}) =>
  normDispatch(label, addLayerNormKernel, [rows, d, eps], opts, {}, b);

/**
 * Split-K partials a fold reduces: [S, rows, d] in `part` from float `offset` (0 when absent), K, K per split,
 * and the bias [d] (or none).
 */
interface Partials {
  part: GPUBuffer;
  offset?: number;
  K: number;
  kChunk: number;
  bias: GPUBuffer | null;
}

/**
 * addLayerNorm with b = attn_output formed here from attention.dense's split-K partials (dense.part
 * [S', rows, d], reduced as its own reduction would: split order through acc(), + bias, one st()) and written
 * to `attn`: attn = dense(…); r = attn + a; y = LN(r; w, bias). The same bits as the unfolded pair.
 */
export const addLayerNormFold: NormLauncher<{
  a: GPUBuffer;
  dense: Partials;
  w: GPUBuffer;
  bias: GPUBuffer;
  attn: GPUBuffer;
  r: GPUBuffer;
  y: GPUBuffer;
  dummy: GPUBuffer;
}> = (label, b, rows, d, eps, opts = {}) => {
  const { dense } = b;
  return normDispatch(
    label,
    addLayerNormFoldKernel,
    [rows, d, eps],
    opts,
    {},
    {
      a: b.a,
      dense_b: dense.bias ?? b.dummy,
      dense_part: {
        buffer: dense.part,
        offset: (dense.offset ?? 0) * 4,
        size: Math.ceil(dense.K / dense.kChunk) * rows * d * 4,
      },
      w: b.w,
      bias: b.bias,
      attn: b.attn,
      r: b.r,
      y: b.y,
    },
    [dense.K, dense.kChunk, dense.bias ? 1 : 0],
  );
};

/**
 * layerNorm2 over a residual row formed here from the previous layer's MLP down-projection partials, as its
 * split-K reduction would: x = ((Σ mlp + b) + attn) + r1 (parallel: `residuals` 2) or (Σ mlp + b) + r1
 * (sequential: 1), written to `x`; attn_output itself formed from attention.dense's partials and written to
 * `attn` when `dense` is given, read from `attn` otherwise (bound either way: unused with one residual). Then
 * y1 (and y2) as layerNorm2. Both sets of partials must sit in one buffer (at their offsets): 12 storage
 * bindings in all.
 */
export const layerNorm2Fold: DualNormLauncher<
  {
    mlp: Partials;
    r1: GPUBuffer;
    residuals: 1 | 2;
    attn: GPUBuffer;
    dense: Partials | null;
  } & FirstNorm
> = (label, b, second, rows, d, eps, opts = {}) => {
  const { mlp, dense } = b;
  // What is not read aliases a read-only binding (a buffer bound read-write is bound once).
  const mlpBias = mlp.bias ?? b.w1;
  if (dense && dense.part !== mlp.part)
    throw new Error(`${label}: both GEMMs' partials must share one buffer`);
  return normDispatch(
    label,
    layerNorm2FoldKernel,
    [rows, d, eps],
    opts,
    { DUAL: second !== null, RESIDUALS: b.residuals, FOLD_ATTN: dense !== null },
    {
      part: mlp.part,
      b: mlpBias,
      r1: b.r1,
      dense_b: dense?.bias ?? mlpBias,
      attn: b.attn,
      x: b.x,
      w1: b.w1,
      b1: b.b1,
      y1: b.y1,
      ...(second ?? { w2: b.w1, b2: b.b1, y2: b.dummy }),
    },
    [
      mlp.K,
      mlp.kChunk,
      mlp.bias ? 1 : 0,
      dense?.K ?? 1,
      dense?.kChunk ?? 1,
      dense?.bias ? 1 : 0,
      mlp.offset ?? 0,
      dense?.offset ?? 0,
    ],
  );
};
