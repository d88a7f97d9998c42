// The precision modes of either path (the storage format and the accumulator) and the rounding of one value to
// a mode's storage, as the kernels' st() does: the CPU twin the oracles and the metrics use. The WGSL override
// constants of each mode are in src/kernels/precision.ts. Imports nothing of ours but the bit conversions.
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from './bits';

export type Precision = 'fp32' | 'fp16' | 'fp16acc' | 'bf16';
export const PRECISIONS: readonly Precision[] = ['fp32', 'fp16', 'fp16acc', 'bf16'];

/** Rounds one value as the kernels' st() does: to f32, then to the storage precision (nearest even). */
export function roundStorage(p: Precision, v: number): number {
  if (p === 'fp16' || p === 'fp16acc') return f16BitsToF32(f32ToF16Bits(v));
  if (p === 'bf16') return bf16BitsToF32(f32ToBf16Bits(v));
  return Math.fround(v);
}

export function roundStorageArray(p: Precision, a: ArrayLike<number>): Float64Array {
  return Float64Array.from(a, (v) => roundStorage(p, v));
}

/** Unit roundoff of the storage precision (half an ulp at 1). */
export function storageUnitRoundoff(p: Precision): number {
  return p === 'bf16' ? 2 ** -8 : p === 'fp32' ? 2 ** -24 : 2 ** -11;
}
