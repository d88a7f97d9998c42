// The precision modes of either path and the one table of what each means (the storage format, its safetensors
// dtype, the WGSL override constants, the accumulator, the unit roundoff): every part that maps a mode to a format
// reads PRECISION_FORMATS. The rounding of one value to a mode's storage, as the kernels' st() does, is the CPU twin
// the oracles and the metrics use. Imports nothing of ours but the bit conversions and their types.
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from './bits';
import type { DType } from './types';

export type Precision = 'fp32' | 'fp16' | 'fp16acc' | 'bf16';
export const PRECISIONS: readonly Precision[] = ['fp32', 'fp16', 'fp16acc', 'bf16'];

export interface PrecisionFormat {
  /** The format a stored value has (numeric/round.ts's names). */
  storage: 'fp32' | 'fp16' | 'bf16';
  /** Its safetensors dtype (a recorded run's tensors). */
  dtype: DType;
  /** The kernels' STORAGE_PREC override (shaders/common/precision.wgsl) and the GPU metrics' format code. */
  storageCode: 0 | 1 | 2;
  /** fp16acc = fp16 storage with fp16 accumulators (how such kernels are written). */
  accF16: boolean;
  /** Unit roundoff of the storage format (half an ulp at 1). */
  unitRoundoff: number;
}

export const PRECISION_FORMATS: Readonly<Record<Precision, PrecisionFormat>> = {
  fp32: { storage: 'fp32', dtype: 'F32', storageCode: 0, accF16: false, unitRoundoff: 2 ** -24 },
  fp16: { storage: 'fp16', dtype: 'F16', storageCode: 1, accF16: false, unitRoundoff: 2 ** -11 },
  fp16acc: { storage: 'fp16', dtype: 'F16', storageCode: 1, accF16: true, unitRoundoff: 2 ** -11 },
  bf16: { storage: 'bf16', dtype: 'BF16', storageCode: 2, accF16: false, unitRoundoff: 2 ** -8 },
};

/** Rounds one value as the kernels' st() does: to f32, then to the storage precision (nearest even). */
export function roundStorage(p: Precision, v: number): number {
  const s = PRECISION_FORMATS[p].storage;
  if (s === 'fp16') return f16BitsToF32(f32ToF16Bits(v));
  if (s === 'bf16') return bf16BitsToF32(f32ToBf16Bits(v));
  return Math.fround(v);
}

export function roundStorageArray(p: Precision, a: ArrayLike<number>): Float64Array {
  return Float64Array.from(a, (v) => roundStorage(p, v));
}

/** Unit roundoff of the storage precision (half an ulp at 1). */
export function storageUnitRoundoff(p: Precision): number {
  return PRECISION_FORMATS[p].unitRoundoff;
}
