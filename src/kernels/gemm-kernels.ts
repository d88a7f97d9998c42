// The kernels of the fused GEMM's epilogue files: each epilogue file (shaders/fused/linear_*.wgsl, qkv_rotary.wgsl)
// compiles against every core — the tiled core (common/gemm_core.wgsl), its split-K partial and reduction, the
// barrier-free core, the few-row core and the subgroup core — as one KernelDef each. fused-linear.ts launches them.
import type { KernelDef } from '../gpu/pipelines';

const CORE_INCLUDES = [
  'common/precision.wgsl',
  'common/weights.wgsl',
  'common/gemm_core.wgsl',
  'common/gemm_load.wgsl',
] as const;
const GEMM_INCLUDES = [...CORE_INCLUDES, 'common/gemm_whole.wgsl'] as const;
const SPLIT_INCLUDES = [...CORE_INCLUDES, 'common/gemm_split.wgsl'] as const;
const REDUCE_INCLUDES = ['common/precision.wgsl', 'common/gemm_reduce.wgsl'] as const;
/** The barrier-free core (CPU adapters: GemmPolicy.cpu), whole and split. */
const PLAIN_INCLUDES = [
  'common/precision.wgsl',
  'common/weights.wgsl',
  'common/gemm_io.wgsl',
  'common/gemm_plain.wgsl',
] as const;
/** The few-row core (decode steps on GPUs: GemmPolicy.gemvRows), whole and split-K in one dispatch. */
const GEMV_INCLUDES = [
  'common/precision.wgsl',
  'common/weights.wgsl',
  'common/gemm_io.wgsl',
  'common/gemm_gemv.wgsl',
] as const;
/**
 * The subgroup core (GemmPolicy.subgroup, once the device's self-check passed), whole and split: the `enable`
 * directive first. Only devices with the `subgroups` feature compile these.
 */
const SUBGROUP_INCLUDES = [
  'common/subgroups.wgsl',
  'common/precision.wgsl',
  'common/weights.wgsl',
  'common/gemm_io.wgsl',
  'common/gemm_subgroup.wgsl',
] as const;
/** The core's bindings after a kernel file's own: x [M, K], w [N, K] (and the split-K workspace [S, M, N]). */
const CORE_BINDINGS = [
  { name: 'x', kind: 'read' },
  { name: 'w', kind: 'read' },
] as const;
const SPLIT_BINDINGS = [...CORE_BINDINGS, { name: 'ws', kind: 'rw' }] as const;
const REDUCE_BINDINGS = [{ name: 'ws', kind: 'read' }] as const; // [S, M, N]

/**
 * The kernels of one epilogue file: the GEMM, the split-K partial GEMM (the same file on the core with
 * common/gemm_split.wgsl), the split-K reduction (the same file on common/gemm_reduce.wgsl), and the first two
 * on the barrier-free core (common/gemm_plain.wgsl: the same bits, for CPU adapters), and the few-row core
 * (common/gemm_gemv.wgsl: the same bits, whole or split in one dispatch, for decode steps on GPUs), and the
 * first two on the subgroup core (common/gemm_subgroup.wgsl: the same bits, on devices with subgroups).
 */
export function gemmKernels(
  name: string,
  file: string,
  own: KernelDef['bindings'],
  extra: readonly string[] = [],
) {
  const params = { name: 'params', kind: 'uniform' } as const;
  const gemm: KernelDef = {
    name: `fused/${name}`,
    file,
    includes: [...GEMM_INCLUDES, ...extra],
    bindings: [params, ...own, ...CORE_BINDINGS],
  };
  const partial: KernelDef = {
    name: `fused/${name}.splitk`,
    file,
    includes: [...SPLIT_INCLUDES, ...extra],
    bindings: [params, ...own, ...SPLIT_BINDINGS],
  };
  const reduce: KernelDef = {
    name: `fused/${name}.reduce`,
    file,
    includes: [...REDUCE_INCLUDES, ...extra],
    bindings: [params, ...own, ...REDUCE_BINDINGS],
  };
  const plain: KernelDef = {
    name: `fused/${name}.plain`,
    file,
    includes: [...PLAIN_INCLUDES, 'common/gemm_whole.wgsl', ...extra],
    bindings: [params, ...own, ...CORE_BINDINGS],
  };
  const plainPartial: KernelDef = {
    name: `fused/${name}.plain.splitk`,
    file,
    includes: [...PLAIN_INCLUDES, 'common/gemm_split.wgsl', ...extra],
    bindings: [params, ...own, ...SPLIT_BINDINGS],
  };
  const gemv: KernelDef = {
    name: `fused/${name}.gemv`,
    file,
    includes: [...GEMV_INCLUDES, ...extra],
    bindings: [params, ...own, ...CORE_BINDINGS],
  };
  const subgroup: KernelDef = {
    name: `fused/${name}.subgroup`,
    file,
    includes: [...SUBGROUP_INCLUDES, 'common/gemm_whole.wgsl', ...extra],
    bindings: [params, ...own, ...CORE_BINDINGS],
  };
  const subgroupPartial: KernelDef = {
    name: `fused/${name}.subgroup.splitk`,
    file,
    includes: [...SUBGROUP_INCLUDES, 'common/gemm_split.wgsl', ...extra],
    bindings: [params, ...own, ...SPLIT_BINDINGS],
  };
  return { gemm, partial, reduce, plain, plainPartial, gemv, subgroup, subgroupPartial };
}

/** The kernels of one epilogue file (gemmKernels). */
export type GemmKernels = ReturnType<typeof gemmKernels>;
