// The fused path's linear kernels: one shared GEMM core (shaders/common/gemm_core.wgsl, which holds the entry
// point) with a small epilogue file per kernel (shaders/fused/*.wgsl: bindings + gemm_epilogue()). Convention:
// y[M, N] = x[M, K] · W[N, K]^T (nn.Linear layout).
// Split-K (the linear kernels): the GEMM writes S partial sums into a workspace [S, M, N] (GEMM_SPLIT), then a
// reduction (shaders/common/gemm_reduce.wgsl compiled with the same epilogue file) adds them and applies the
// epilogue, so a launch is one dispatch, or two when split. Tiles and split count come from gemm-configs.ts
// (a measured table per adapter, else a heuristic) unless `opts` overrides them.
// `opts.constants` is merged into the pipeline constants: precision ({ STORAGE_PREC, ACC_F16 }), fault
// switches, or tile overrides (BM, BN, BK, TM, TN, GEMM_BUFS; see gemm.ts).
// The same bits on other cores (gemm-kernels.ts): the barrier-free core on CPU adapters (GemmPolicy.cpu), the
// few-row GEMV for decode steps (GemmPolicy.gemvRows) and the subgroup core (GemmPolicy.subgroup, gemm-subgroup.ts).

import type { BufferRef, KernelDef, OverrideConstants } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import { type GemvShape, gemvConstants, gemvFor, gemvWorkgroups } from './fused-gemv';
import { GEMM_DECODE, GEMM_SMALL, gemmConstants, gemmWorkgroups, TILE_KEYS } from './gemm';
import { chooseGemm, type GemmPolicy, groupMFor, UNKNOWN_ADAPTER } from './gemm-configs';
import { type GemmKernels, gemmKernels } from './gemm-kernels';
import { SUBGROUP_KEYS, type SubgroupTiles, subgroupConstants, subgroupWorkgroups } from './gemm-subgroup';
import { ceilDiv, MAX_GROUPS } from './grid';
import { type KvPositions, kvPositions } from './positions';
import { checkRotaryDims } from './rope';

export { type GemmKernels, gemmKernels } from './gemm-kernels';

export interface GemmOpts {
  constants?: OverrideConstants;
  /** How tiles and split count are chosen (default: the heuristic for an unknown adapter). */
  policy?: GemmPolicy;
  /**
   * A workspace of at least `floats` f32 for split-K partials (the plan shares one across its GEMMs: each is
   * consumed by the next dispatch). Without it no launch is split.
   */
  workspace?: (floats: number) => GPUBuffer;
  /** Force the K per split (tests, tuning): a multiple of BK; ≥ K for no split; needs `workspace` below K. */
  kChunk?: number;
}

/**
 * Threads per workgroup of the barrier-free core (one per 4 rows and 4 columns). It runs every launch on a CPU
 * adapter (SwiftShader, 2 cores, 2026-11-26: the embedded model's decode step 138 ms against 630 with the tiled
 * core); both give the same bits, so the choice is free.
 */
const PLAIN_WG = 64;

/** Threads per workgroup of the split-K reduction (one per row and 4-column group). */
const REDUCE_WG = 64;

const BIAS_OUT: KernelDef['bindings'] = [
  { name: 'b', kind: 'read' }, // [N]
  { name: 'y', kind: 'rw' }, // [M, N]
];

const linearBiasPair = gemmKernels('linear_bias', 'fused/linear_bias.wgsl', BIAS_OUT);
const linearGeluPair = gemmKernels('linear_gelu', 'fused/linear_gelu.wgsl', BIAS_OUT, ['common/gelu.wgsl']);
const linearResidualPair = gemmKernels('linear_residual', 'fused/linear_residual.wgsl', [
  { name: 'b', kind: 'read' }, // [N]
  { name: 'r1', kind: 'read' }, // [M, N] hidden_states
  { name: 'r2', kind: 'read' }, // [M, N] attn_output
  { name: 'y', kind: 'rw' }, // [M, N]
]);

export const linearBiasKernel = linearBiasPair.gemm;
export const linearGeluKernel = linearGeluPair.gemm;
export const linearResidualKernel = linearResidualPair.gemm;

const qkvRotaryPair = gemmKernels('qkv_rotary', 'fused/qkv_rotary.wgsl', [
  { name: 'b', kind: 'read' }, // [3d] = [H, 3, hd]
  { name: 'cos', kind: 'read' }, // [>= p0 + T, r/2]
  { name: 'sin', kind: 'read' }, // [>= p0 + T, r/2]
  { name: 'q', kind: 'rw' }, // [H, T, hd]
  { name: 'k', kind: 'rw' }, // [H, rows, hd] (rows = T in a whole forward)
  { name: 'v', kind: 'rw' }, // [H, rows, hd]
]); // then x [T, d], w [3d, d] = [H, 3, hd, d]
export const qkvRotaryKernel = qkvRotaryPair.gemm;

export const FUSED_LINEAR_KERNELS: readonly KernelDef[] = [
  linearBiasKernel,
  linearGeluKernel,
  linearResidualKernel,
  qkvRotaryKernel,
  ...[linearBiasPair, linearGeluPair, linearResidualPair, qkvRotaryPair].flatMap((k) => [
    k.partial,
    k.reduce,
    k.plain,
    k.plainPartial,
    k.gemv,
  ]),
];

/** How one launch of (M, N, K) runs: pipeline constants, tiles, split count and K per split. */
export interface GemmLaunch {
  constants: OverrideConstants;
  tiles: ReturnType<typeof gemmConstants>['tiles'];
  split: number;
  kChunk: number;
  /** The few-row core's shape when it runs the launch (one dispatch, every split inside), else null. */
  gemv: GemvShape | null;
  /** The subgroup core's layout when it runs the launch (GemmPolicy.subgroup; never with the GEMV), else null. */
  subgroup: SubgroupTiles | null;
}

/**
 * The launch of (M, N, K) under `opts`: the policy's configuration with the tile constants of `opts.constants`
 * on top, and its K partition (forced by opts.kChunk, or the policy's; none without a workspace).
 */
export function gemmLaunch(label: string, M: number, N: number, K: number, opts: GemmOpts = {}): GemmLaunch {
  for (const [k, v] of Object.entries({ M, N, K }))
    if (!Number.isInteger(v) || v < 1)
      throw new Error(`${label}: GEMM ${k} = ${v} must be a positive integer`);
  const config = chooseGemm(M, N, K, opts.policy);
  let { constants, tiles } = gemmConstants(M, N, opts.constants, config.tiles);
  let kChunk = opts.kChunk ?? (opts.workspace ? config.kChunk : K);
  if (!Number.isInteger(kChunk) || kChunk < 1) throw new Error(`${label}: K per split ${kChunk} must be ≥ 1`);
  kChunk = Math.min(kChunk, K);
  const split = ceilDiv(K, kChunk);
  // The few-row tiles step K by 32; a K partition finer than that (forced: the policies' are multiples of 64)
  // takes the 16-deep ones, unless the caller chose the tiles. The sums are the same bits either way.
  const ownTiles = TILE_KEYS.some((k) => opts.constants?.[k] !== undefined);
  if (split > 1 && kChunk % tiles.BK && config.tiles === GEMM_DECODE && !ownTiles)
    ({ constants, tiles } = gemmConstants(M, N, opts.constants, GEMM_SMALL));
  const gemv = gemvFor(M, N, split, opts.policy ?? UNKNOWN_ADAPTER);
  if (split > 1) {
    if (!opts.workspace && !gemv)
      throw new Error(`${label}: split-K (${split} splits of ${kChunk}) needs a workspace`);
    if (kChunk % tiles.BK)
      throw new Error(`${label}: K per split ${kChunk} is not a multiple of BK = ${tiles.BK}`);
    if (split > MAX_GROUPS) throw new Error(`${label}: ${split} splits exceed ${MAX_GROUPS} workgroups`);
  }
  const subgroup = gemv ? null : (opts.policy?.subgroup ?? null);
  // The policy's workgroup order (GemmPolicy.groupM) where it applies and the caller set none.
  const groupM = groupMFor(opts.policy, M, N, K, tiles.BM);
  if (groupM > 1 && constants.GEMM_GROUP_M === undefined) constants = { ...constants, GEMM_GROUP_M: groupM };
  return { constants, tiles, split, kChunk, gemv, subgroup };
}

/** Pipeline constants of the GEMM cores that the split-K reduction does not declare. */
const CORE_ONLY = new Set<string>([
  ...TILE_KEYS,
  ...SUBGROUP_KEYS,
  'FAULT_TILE_OFFSET',
  'GEMM_GROUP_M',
  'W_F16',
  'GEMM_PLAIN_WG',
]);

/** The tile override keys (for callers that build constants by hand). */
export const GEMM_TILE_KEYS = TILE_KEYS;

/**
 * One fused GEMM: a dispatch of the epilogue's kernel, or (split-K) the partial GEMM into the workspace then
 * the reduction with the epilogue. `own` are the epilogue's buffers (bias, residuals, output).
 */
export function gemmSpecs(
  pair: GemmKernels,
  label: string,
  io: { x: GPUBuffer; w: BufferRef },
  own: Record<string, BufferRef>,
  M: number,
  N: number,
  K: number,
  head: number[],
  extraConstants: OverrideConstants,
  opts: GemmOpts,
): DispatchSpec[] {
  const launch = gemmLaunch(label, M, N, K, opts);
  const constants = { ...launch.constants, ...extraConstants };
  const params = paramsBytes([M, N, K, launch.kChunk, ...head]);
  if (launch.gemv) {
    const gemv = { ...constants, ...gemvConstants(launch.gemv) };
    const workgroups = gemvWorkgroups(N, launch.gemv);
    const buffers = { ...own, x: io.x, w: io.w };
    return [{ label, kernel: pair.gemv, constants: gemv, buffers, params, workgroups }];
  }
  // The core: the subgroup core where the policy runs it, else the barrier-free one on CPU adapters, else the tiled.
  const sg = launch.subgroup;
  const plain = !sg && opts.policy?.cpu === true;
  const grid = (split: number): DispatchSpec['workgroups'] =>
    sg
      ? subgroupWorkgroups(M, N, sg, split)
      : plain
        ? [ceilDiv(ceilDiv(N, 4), PLAIN_WG), ceilDiv(M, 4), split]
        : gemmWorkgroups(M, N, launch.tiles, split);
  if (plain) constants.GEMM_PLAIN_WG = PLAIN_WG;
  if (sg) Object.assign(constants, subgroupConstants(sg));
  if (launch.split === 1) {
    return [
      {
        label,
        kernel: sg ? pair.subgroup : plain ? pair.plain : pair.gemm,
        constants,
        buffers: { ...own, x: io.x, w: io.w },
        params,
        workgroups: grid(1),
      },
    ];
  }
  const ws = opts.workspace!(launch.split * M * N);
  // The reduction never reads tiles, and takes only the constants its module declares.
  const reduceConstants: OverrideConstants = { GEMM_REDUCE_WG: REDUCE_WG };
  for (const [k, v] of Object.entries(constants)) if (!CORE_ONLY.has(k)) reduceConstants[k] = v;
  const groups = ceilDiv(ceilDiv(N, 4), REDUCE_WG);
  if (M > MAX_GROUPS) throw new Error(`${label}: split-K reduction over ${M} rows exceeds ${MAX_GROUPS}`);
  return [
    {
      label: `${label}/splitk`,
      kernel: sg ? pair.subgroupPartial : plain ? pair.plainPartial : pair.partial,
      constants,
      buffers: { ...own, x: io.x, w: io.w, ws },
      params,
      workgroups: grid(launch.split),
    },
    {
      label,
      kernel: pair.reduce,
      constants: reduceConstants,
      buffers: { ...own, ws },
      params,
      workgroups: [groups, M, 1],
    },
  ];
}

/** The buffers every epilogue binds (the linear epilogues bind no more). */
export interface LinearBuffers {
  x: GPUBuffer; // [M, K]
  w: BufferRef; // [N, K] (a buffer or a range of one)
  b: GPUBuffer | null; // [N]; null: no bias (the dummy is bound)
  y: GPUBuffer; // [M, N]
  dummy: GPUBuffer;
}

export interface ResidualBuffers extends LinearBuffers {
  r1: GPUBuffer; // [M, N]
  r2: GPUBuffer | null; // [M, N]
}

/** A launcher of one epilogue: its dispatches for y[M, N] from x[M, K] and W[N, K]. */
type Launcher<B, R> = (label: string, buf: B, M: number, N: number, K: number, opts?: GemmOpts) => R;

/** One dispatch: split-K is off (no workspace), whatever the policy says. */
function single(specs: DispatchSpec[]): DispatchSpec {
  if (specs.length !== 1) throw new Error(`${specs[0]?.label}: expected one dispatch, got ${specs.length}`);
  return specs[0];
}
const unsplit = (opts: GemmOpts): GemmOpts => ({ ...opts, workspace: undefined, kChunk: undefined });

/**
 * The two launchers of one epilogue file: `ops`, its dispatches (split-K where the policy and a workspace
 * allow), and `one`, the same as one dispatch (never split-K). `own` names the epilogue's buffers (bias,
 * residuals, output); `constants` are its pipeline constants, applied over the launch's.
 */
function epilogueLaunchers<B extends LinearBuffers>(
  pair: GemmKernels,
  own: (buf: B) => Record<string, BufferRef>,
  constants: (buf: B, opts: GemmOpts) => OverrideConstants = () => ({}),
): { ops: Launcher<B, DispatchSpec[]>; one: Launcher<B, DispatchSpec> } {
  const ops: Launcher<B, DispatchSpec[]> = (label, buf, M, N, K, opts = {}) =>
    gemmSpecs(pair, label, buf, own(buf), M, N, K, [buf.b ? 1 : 0], constants(buf, opts), opts);
  const one: Launcher<B, DispatchSpec> = (label, buf, M, N, K, opts = {}) =>
    single(ops(label, buf, M, N, K, unsplit(opts)));
  return { ops, one };
}

const biasOut = (buf: LinearBuffers) => ({ b: buf.b ?? buf.dummy, y: buf.y });
const linearBiasLaunchers = epilogueLaunchers(linearBiasPair, biasOut);
const linearGeluLaunchers = epilogueLaunchers(linearGeluPair, biasOut);
const linearResidualLaunchers = epilogueLaunchers(
  linearResidualPair,
  (buf: ResidualBuffers) => ({ b: buf.b ?? buf.dummy, r1: buf.r1, r2: buf.r2 ?? buf.dummy, y: buf.y }),
  (buf, opts) => ({ RESIDUALS: buf.r2 ? 2 : 1, ...opts.constants }),
);

/**
 * y[M, N] = x[M, K] · W[N, K]^T (+ b[N]); `b: null` for none (the LM head). The dispatches of one launch: one,
 * or two when split-K (the partial GEMM `${label}/splitk`, then the reduction labelled `label`, which writes y).
 */
export const linearBiasOps = linearBiasLaunchers.ops;

/** y[M, N] = gelu_exact(x[M, K] · W[N, K]^T + b[N]) (the MLP up-projection and its activation); see linearBiasOps. */
export const linearGeluOps = linearGeluLaunchers.ops;

/**
 * y[M, N] = ((x·W^T + b) + r2) + r1 (parallel residual, HF `mlp_output + attn_output + hidden_states`,
 * r1 = hidden_states, r2 = attn_output) or, with `r2: null`, (x·W^T + b) + r1 (sequential residual); see
 * linearBiasOps. Faults: FAULT_WIRING (r2 twice, r1 dropped), FAULT_DROP_BIAS.
 */
export const linearResidualOps = linearResidualLaunchers.ops;

/** linearBiasOps as one dispatch (never split-K). */
export const linearBias = linearBiasLaunchers.one;

/** linearGeluOps as one dispatch (never split-K). */
export const linearGelu = linearGeluLaunchers.one;

/** linearResidualOps as one dispatch (never split-K). */
export const linearResidual = linearResidualLaunchers.one;

/** The buffers of the fused QKV projection. */
interface QkvBuffers {
  x: GPUBuffer; // [T, d]
  w: BufferRef; // [3d, d]
  b: GPUBuffer | null; // [3d]
  cos: GPUBuffer; // [>= p0 + T, r/2]
  sin: GPUBuffer; // [>= p0 + T, r/2]
  q: GPUBuffer; // [H, T, hd]
  k: GPUBuffer; // [H, rows, hd]
  v: GPUBuffer; // [H, rows, hd]
  dummy: GPUBuffer;
}

/**
 * QKV projection + bias + head split + partial rotary in one kernel: x [T, d] (d = H·hd), W [3d, d] and
 * b [3d] in HF's fused layout [H, 3, hd], cos/sin [T, r/2] (rotaryTables) -> q, k, v each [H, T, hd], the
 * first r dims of q and k rotated (rotate-half). The GEMM runs over 3·H·hdE permuted columns (hdE = hd
 * rounded up to even; see shaders/fused/qkv_rotary.wgsl). Fault: FAULT_GPTJ_ROTARY. With `at` (KV-cache
 * decoding) the rows are the tokens at positions at.p0.. and k, v go to rows at.p0.. of [H, at.rows, hd].
 * Split-K as the linear kernels (the reduction runs the same epilogue: a rotary pair is two adjacent virtual
 * columns of one 4-column group, summed before it is rotated); the K partition is per (3·H·hdE, d), so a
 * decoded row keeps the bits of that row of a whole forward.
 */
export function qkvRotaryOps(
  label: string,
  buf: QkvBuffers,
  T: number,
  H: number,
  hd: number,
  r: number,
  opts: GemmOpts = {},
  at?: KvPositions,
): DispatchSpec[] {
  const { p0, rows } = kvPositions(label, T, at);
  checkRotaryDims(label, r, hd);
  const d = H * hd;
  const virtualCols = 3 * H * (hd + (hd % 2));
  const own = { b: buf.b ?? buf.dummy, cos: buf.cos, sin: buf.sin, q: buf.q, k: buf.k, v: buf.v };
  const head = [H, hd, r, buf.b ? 1 : 0, p0, rows];
  return gemmSpecs(qkvRotaryPair, label, buf, own, T, virtualCols, d, head, {}, opts);
}

/** qkvRotaryOps as one dispatch (never split-K). */
export function qkvRotary(...args: Parameters<typeof qkvRotaryOps>): DispatchSpec {
  const [label, buf, T, H, hd, r, opts = {}, at] = args;
  return single(qkvRotaryOps(label, buf, T, H, hd, r, unsplit(opts), at));
}
