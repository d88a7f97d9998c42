// Precision modes of either path, as WGSL override constants (shaders/common/precision.wgsl) and as the
// matching CPU rounding for the oracle.
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from '../numeric/bits';

export type Precision = 'fp32' | 'fp16' | 'fp16acc' | 'bf16';
export const PRECISIONS: readonly Precision[] = ['fp32', 'fp16', 'fp16acc', 'bf16'];

export interface PrecisionConstants {
  STORAGE_PREC: number; // 0 fp32, 1 fp16, 2 bf16
  ACC_F16: boolean;
  [k: string]: number | boolean;
}

/** fp16acc = fp16 storage with fp16 accumulators (how such kernels are written). */
export function precisionConstants(p: Precision): PrecisionConstants {
  switch (p) {
    case 'fp32':
      return { STORAGE_PREC: 0, ACC_F16: false };
    case 'fp16':
      return { STORAGE_PREC: 1, ACC_F16: false };
    case 'fp16acc':
      return { STORAGE_PREC: 1, ACC_F16: true };
    case 'bf16':
      return { STORAGE_PREC: 2, ACC_F16: false };
  }
}

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
