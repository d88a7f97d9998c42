// Reading one tensor of a safetensors file as fp32: F32 copied byte-wise (any alignment) or viewed in place where
// 4-byte aligned, F16 converted exactly through a table of all 65536 patterns (subnormals, inf, NaN payloads), BF16
// by `bits << 16`; the 16-bit ones read through a Uint16Array where 2-byte aligned, byte pairs where not.
import { f16BitsToF32Bits } from '../numeric/bits';
import type { DType } from '../numeric/types';
import { ModelLoadError, quoteName } from './errors';
import { BYTES_PER_ELEMENT, numElements, type SafetensorsEntry } from './safetensors';

/** f16 -> f32 bit patterns for all 65536 inputs, built on first use. */
let f16Table: Uint32Array | null = null;
function f16ToF32Table(): Uint32Array {
  if (f16Table === null) {
    f16Table = new Uint32Array(65536);
    for (let h = 0; h < 65536; h++) f16Table[h] = f16BitsToF32Bits(h);
  }
  return f16Table;
}

/** True on little-endian hosts (every browser and Node platform in practice). */
export const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * One tensor as a fresh fp32 array (row-major, numel(shape) values). F16 is converted exactly (subnormals, inf,
 * NaN payloads), BF16 by `bits << 16`, F32 copied byte-wise (offsets need not be 4-aligned).
 */
export function readTensorF32(
  bytes: Uint8Array,
  dataOffset: number,
  e: SafetensorsEntry,
  file = 'model.safetensors',
): Float32Array {
  const start = dataOffset + e.begin;
  const stop = dataOffset + e.end;
  const bpe = BYTES_PER_ELEMENT[e.dtype];
  const n = numElements(e.shape);
  if (!(start >= 0 && start <= stop && stop <= bytes.length) || stop - start !== n * bpe) {
    throw new ModelLoadError(
      file,
      `tensor ${quoteName(e.name)} bytes ${start}..${stop} do not fit the file or its shape`,
      e.name,
    );
  }
  return decodeTensorF32(bytes.subarray(start, stop), e.dtype, n);
}

/**
 * `n` values of `dtype` stored little-endian in `src` (exactly n * bytes-per-element bytes, any alignment) as a
 * fresh fp32 array. F16 is converted exactly, BF16 by `bits << 16`, F32 copied byte-wise.
 */
export function decodeTensorF32(src: Uint8Array, dtype: DType, n: number): Float32Array {
  const out = new Float32Array(n);
  if (dtype === 'F32') {
    if (LITTLE_ENDIAN) {
      new Uint8Array(out.buffer).set(src); // a byte copy: no misaligned Float32Array view
    } else {
      const dv = new DataView(src.buffer, src.byteOffset, src.byteLength);
      for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
    }
    return out;
  }
  const bits = new Uint32Array(out.buffer); // [n]: writing bits keeps NaN payloads
  if (LITTLE_ENDIAN && src.byteOffset % 2 === 0) {
    const h = new Uint16Array(src.buffer, src.byteOffset, n); // [n] the stored 16-bit patterns
    if (dtype === 'F16') {
      const table = f16ToF32Table();
      for (let i = 0; i < n; i++) bits[i] = table[h[i]];
    } else {
      for (let i = 0; i < n; i++) bits[i] = h[i] << 16;
    }
    return out;
  }
  if (dtype === 'F16') {
    const table = f16ToF32Table();
    for (let i = 0; i < n; i++) bits[i] = table[src[2 * i] | (src[2 * i + 1] << 8)];
  } else {
    for (let i = 0; i < n; i++) bits[i] = ((src[2 * i] | (src[2 * i + 1] << 8)) << 16) >>> 0;
  }
  return out; // bits went in as native u32 and come out as native f32: right on either endianness
}

/**
 * `n` F32 values stored little-endian in `src` as a Float32Array on `src`'s own bytes (no copy), where the host is
 * little-endian and `src` starts 4-byte aligned in its buffer; null otherwise (decodeTensorF32 copies them then).
 * The view shares `src`'s memory: it is only as lasting as the bytes under it.
 */
export function viewTensorF32(src: Uint8Array, dtype: DType, n: number): Float32Array | null {
  if (dtype !== 'F32' || !LITTLE_ENDIAN || src.byteOffset % 4 !== 0 || src.byteLength !== 4 * n) return null;
  return new Float32Array(src.buffer, src.byteOffset, n);
}
