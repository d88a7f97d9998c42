// The precision modes and the linear-epilogue cases the GEMM cores' bit-equality tests run (gemm-plain, gemm-gemv, gemm-subgroup .test.ts): f32,
// fp16 accumulation with bf16 storage, packed-f16 weights and the tile-offset teaching fault, each on the tiled
// core's tile configuration the test names (a mode compiles a pipeline per shape on SwiftShader: the tests choose
// small tiles).
import type { DispatchSpec } from '../gpu/program';
import { randn } from '../numeric/random';
import { type GemmOpts, linearBiasOps, linearGeluOps, linearResidualOps } from './fused-linear';
import type { GemmTiles } from './gemm';
import type { Harness } from './testing';

export type GemmMode = {
  name: string;
  constants: Record<string, number | boolean>;
  tiles: GemmTiles;
  f16w?: boolean;
};

/** The four modes, each on the tiles given for it. */
export function gemmModes(t: {
  f32: GemmTiles;
  acc: GemmTiles;
  f16w: GemmTiles;
  fault: GemmTiles;
}): GemmMode[] {
  return [
    { name: 'f32', constants: {}, tiles: t.f32 },
    { name: 'fp16 accumulation, bf16 storage', constants: { ACC_F16: true, STORAGE_PREC: 2 }, tiles: t.acc },
    { name: 'packed f16 weights', constants: { W_F16: true }, tiles: t.f16w, f16w: true },
    { name: 'FAULT_TILE_OFFSET', constants: { FAULT_TILE_OFFSET: true }, tiles: t.fault },
  ];
}

/**
 * One linear-epilogue case of those tests, its operands drawn from `rng`: linear + bias, no bias and the two-residual
 * add, and with `all` also GELU and the one-residual add; split in `kChunk` pieces (a NaN-poisoned workspace) or
 * whole. `sizes` are the outputs' lengths, `ops(y, o)` the launches writing them. `packF16`: the engine's packing
 * of f16 weights (engine/gpu-model.ts; passed in, as this part does not import the engine).
 */
export function epilogueCase(
  h: Harness,
  rng: () => number,
  mode: GemmMode,
  [M, N, K]: readonly [number, number, number],
  kChunk: number | undefined,
  all: boolean,
  packF16: (w: Float32Array) => Uint32Array,
): { sizes: number[]; ops: (y: GPUBuffer[], o: GemmOpts) => DispatchSpec[]; opts: GemmOpts } {
  const wf = randn(rng, N * K, 1 / Math.sqrt(K));
  const x = h.upload(randn(rng, M * K));
  const w = h.upload(mode.f16w ? packF16(wf) : wf);
  const b = h.upload(randn(rng, N, 0.1));
  const [r1, r2] = [h.upload(randn(rng, M * N)), h.upload(randn(rng, M * N))];
  const dummy = h.upload(new Float32Array(M * N).fill(1000));
  const base = { x, w, b, dummy };
  const opts: GemmOpts = {
    constants: { ...mode.tiles, ...mode.constants },
    ...(kChunk !== undefined ? { kChunk, workspace: (n: number) => h.poisoned(n) } : {}),
  };
  return {
    sizes: new Array(all ? 5 : 3).fill(M * N),
    ops: (y, o) => [
      ...linearBiasOps('lin', { ...base, y: y[0] }, M, N, K, o),
      ...linearBiasOps('head', { ...base, b: null, y: y[1] }, M, N, K, o),
      ...linearResidualOps('out', { ...base, r1, r2, y: y[2] }, M, N, K, o),
      ...(all
        ? [
            ...linearGeluOps('up', { ...base, y: y[3] }, M, N, K, o),
            ...linearResidualOps('out1', { ...base, r1, r2: null, y: y[4] }, M, N, K, o),
          ]
        : []),
    ],
    opts,
  };
}
