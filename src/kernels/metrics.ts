// Launchers of the comparison-metric kernels (shaders/metrics/): pass 1 summarises tiles, pass 2 folds tile
// records into rows and jobs, and the bitwise difference. Planning and decoding: src/compare/gpu-metrics*.ts.
import type { BufferRef, KernelDef } from '../gpu/pipelines';
import type { DispatchSpec } from '../gpu/program';

/** Threads per workgroup (a power of two: the tree reductions halve it). */
export const METRICS_WG = 128;
/** u32 words per tile descriptor (compare and bit-diff) and per reduce range. */
export const TILE_WORDS = 8;
export const RANGE_WORDS = 8;
/** u32 words of one record (shaders/metrics/part.wgsl) and of one row summary. */
export const REC_WORDS = 28;
export const ROW_WORDS = 8;
/** Histogram bins (errorHistogram's default) and the "no histogram" word. */
export const HIST_BINS = 40;
export const NO_HIST = 0xffffffff;
/** Exponent of zero in the records (ZE in shaders/metrics/ext.wgsl). */
export const ZERO_EXP = -100000;

const includes = ['metrics/ext.wgsl', 'metrics/part.wgsl'] as const;

/** Pass 1 with `slots` operand bindings (shaders/metrics/slots_<slots>.wgsl; src/compare/gpu-metrics-slots.ts). */
function compareTilesWith(slots: number): KernelDef {
  return {
    name: `metrics/compare_tiles_${slots}`,
    file: 'metrics/compare_tiles.wgsl',
    includes: [...includes, `metrics/slots_${slots}.wgsl`],
    bindings: [
      { name: 'tiles', kind: 'read' }, // [tiles][TILE_WORDS]
      { name: 'edges', kind: 'read' }, // [HIST_BINS − 1][4], bins by exponent
      { name: 'rec', kind: 'rw' }, // records
      ...Array.from({ length: slots }, (_, i) => ({ name: `o${i}`, kind: 'read' as const })), // operands
    ],
  };
}

const compareTilesKernels = new Map<number, KernelDef>();

export const reduceKernel: KernelDef = {
  name: 'metrics/reduce',
  file: 'metrics/reduce.wgsl',
  includes,
  bindings: [
    { name: 'ranges', kind: 'read' }, // [ranges][RANGE_WORDS]
    { name: 'rec', kind: 'rw' }, // records
  ],
};

export const bitDiffKernel: KernelDef = {
  name: 'metrics/bitdiff',
  file: 'metrics/bitdiff.wgsl',
  bindings: [
    { name: 'a', kind: 'read' }, // u32 [*]
    { name: 'b', kind: 'read' }, // u32 [*]
    { name: 'tiles', kind: 'read' }, // [tiles][TILE_WORDS]
    { name: 'slots', kind: 'rw' }, // [*][2]
  ],
};

const constants = { WG: METRICS_WG };

/** Pass 1: one workgroup per tile of `tiles` (a range of the tile table), its operands in `slots` bindings. */
export function compareTiles(
  label: string,
  b: { tiles: BufferRef; edges: BufferRef; rec: BufferRef },
  operands: BufferRef[],
  slots: number,
  tiles: number,
): DispatchSpec {
  let kernel = compareTilesKernels.get(slots);
  if (!kernel) compareTilesKernels.set(slots, (kernel = compareTilesWith(slots)));
  const buffers: Record<string, BufferRef> = { ...b };
  for (let i = 0; i < slots; i++) buffers[`o${i}`] = operands[i] ?? operands[0];
  return { label, kernel, constants, buffers, workgroups: [tiles, 1, 1] };
}

/** Pass 2: one workgroup per range of `ranges`. */
export function reduceRecords(
  label: string,
  b: { ranges: BufferRef; rec: BufferRef },
  ranges: number,
): DispatchSpec {
  return { label, kernel: reduceKernel, constants, buffers: b, workgroups: [ranges, 1, 1] };
}

/** Bitwise difference: one workgroup per tile. */
export function bitDiffTiles(
  label: string,
  b: { a: BufferRef; b: BufferRef; tiles: BufferRef; slots: BufferRef },
  tiles: number,
): DispatchSpec {
  return { label, kernel: bitDiffKernel, constants, buffers: b, workgroups: [tiles, 1, 1] };
}
