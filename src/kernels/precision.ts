// Precision modes of either path as WGSL override constants (shaders/common/precision.wgsl); the modes and the
// matching CPU rounding are in src/numeric/precision.ts.
import type { Precision } from '../numeric/precision';

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
