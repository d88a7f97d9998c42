// The precision modes the GEMM cores' bit-equality tests run (gemm-plain, gemm-gemv, gemm-subgroup .test.ts): f32,
// fp16 accumulation with bf16 storage, packed-f16 weights and the tile-offset teaching fault, each on the tiled
// core's tile configuration the test names (a mode compiles a pipeline per shape on SwiftShader: the tests choose
// small tiles).
import type { GemmTiles } from './gemm';

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
