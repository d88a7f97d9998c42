// Writing safetensors files (tests, fixtures, synthetic runs and models): tensors packed in the order given, F16 /
// BF16 rounded to nearest even from the f32 bits, the header padded to 8-byte alignment as HF does.
import { f32BitsToBf16Bits, f32BitsToF16Bits } from '../numeric/bits';
import type { DType } from '../numeric/types';
import { BYTES_PER_ELEMENT, numElements, shapeStr } from './safetensors';

export interface TensorToWrite {
  name: string;
  dtype: DType;
  shape: number[];
  data: Float32Array; // [numel(shape)]
}

/**
 * Serialises tensors (in the order given, packed without gaps) into a safetensors file. F16 / BF16 are rounded
 * to nearest even from the f32 bits. The header is padded with spaces to 8-byte alignment, as HF does.
 */
export function writeSafetensors(tensors: TensorToWrite[], metadata?: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata !== undefined) header.__metadata__ = { ...metadata };
  let offset = 0;
  const seen = new Set<string>();
  for (const t of tensors) {
    if (t.name === '__metadata__' || seen.has(t.name))
      throw new Error(`writeSafetensors: bad or duplicate name '${t.name}'`);
    seen.add(t.name);
    const n = numElements(t.shape);
    if (n !== t.data.length) {
      throw new Error(
        `writeSafetensors: '${t.name}' has ${t.data.length} values for shape ${shapeStr(t.shape)}`,
      );
    }
    const len = n * BYTES_PER_ELEMENT[t.dtype];
    header[t.name] = { dtype: t.dtype, shape: t.shape.slice(), data_offsets: [offset, offset + len] };
    offset += len;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerLen = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + headerLen + offset);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, headerLen % 2 ** 32, true);
  dv.setUint32(4, Math.floor(headerLen / 2 ** 32), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + headerLen);
  let p = 8 + headerLen;
  for (const t of tensors) {
    const bits = new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length); // [n] f32 bit patterns
    if (t.dtype === 'F32') {
      for (let i = 0; i < bits.length; i++, p += 4) dv.setUint32(p, bits[i], true);
    } else {
      const conv = t.dtype === 'F16' ? f32BitsToF16Bits : f32BitsToBf16Bits;
      for (let i = 0; i < bits.length; i++, p += 2) dv.setUint16(p, conv(bits[i]), true);
    }
  }
  return out;
}
