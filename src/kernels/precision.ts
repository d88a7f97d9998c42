// Precision modes of either path as WGSL override constants (shaders/common/precision.wgsl), read from the one
// precision table (src/numeric/precision.ts, PRECISION_FORMATS).
import { PRECISION_FORMATS, type Precision } from '../numeric/precision';

export interface PrecisionConstants {
  STORAGE_PREC: number; // 0 fp32, 1 fp16, 2 bf16
  ACC_F16: boolean;
  [k: string]: number | boolean;
}

export function precisionConstants(p: Precision): PrecisionConstants {
  const f = PRECISION_FORMATS[p];
  return { STORAGE_PREC: f.storageCode, ACC_F16: f.accF16 };
}
