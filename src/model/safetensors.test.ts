import { describe, expect, it } from 'vitest';
import {
  bf16BitsToF32,
  f16BitsToF32,
  f16BitsToF32Bits,
  f32Bits,
  f32BitsToBf16Bits,
  f32BitsToF16Bits,
  f32FromBits,
  f32ToBf16Bits,
  f32ToF16Bits,
} from '../numeric/bits';
import { mulberry32 } from '../numeric/random';
import type { DType } from '../numeric/types';
import type { ModelLoadError } from './errors';
import { parseSafetensorsHeader } from './safetensors';
import { readTensorF32 } from './safetensors-read';
import { type TensorToWrite, writeSafetensors } from './safetensors-write';
import { expectLoadError as loadError } from './testing';

/** A safetensors file from a raw header (object or exact text) and a data section. */
function rawFile(header: unknown, data: Uint8Array | number = 0, headerLen?: number): Uint8Array {
  const text = typeof header === 'string' ? header : JSON.stringify(header);
  const json = new TextEncoder().encode(text);
  const dataBytes = typeof data === 'number' ? new Uint8Array(data) : data;
  const out = new Uint8Array(8 + json.length + dataBytes.length);
  new DataView(out.buffer).setUint32(0, headerLen ?? json.length, true);
  out.set(json, 8);
  out.set(dataBytes, 8 + json.length);
  return out;
}

const isF16NaN = (h: number) => (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;

/** Reference f16 value of a bit pattern, straight from the definition. */
function f16Ref(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m === 0 ? s * Number.POSITIVE_INFINITY : Number.NaN;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/**
 * Reference rounding of a finite double to a binary float with `mbits` mantissa bits, minimum normal exponent
 * `emin` and overflow threshold `2^(emax+1)`: round half to even on the exact value, by arithmetic.
 */
function roundRef(x: number, mbits: number, emin: number, emax: number): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  const a = Math.abs(x);
  let e = Math.floor(Math.log2(a));
  while (2 ** e > a) e--;
  while (2 ** (e + 1) <= a) e++;
  const unit = 2 ** (Math.max(e, emin) - mbits);
  const q = a / unit; // exact: a power-of-two scaling
  let r = Math.floor(q);
  const frac = q - r;
  if (frac > 0.5 || (frac === 0.5 && r % 2 === 1)) r++;
  const v = r * unit;
  const max = 2 ** (emax + 1);
  return Math.sign(x) * (v >= max ? Number.POSITIVE_INFINITY : v);
}

describe('f16 conversions', () => {
  it('decodes every f16 bit pattern exactly', () => {
    for (let h = 0; h < 65536; h++) {
      const v = f16BitsToF32(h);
      if (isF16NaN(h)) expect(Number.isNaN(v)).toBe(true);
      else if (v !== f16Ref(h) || Object.is(v, -0) !== Object.is(f16Ref(h), -0)) {
        throw new Error(`f16 0x${h.toString(16)}: ${v} != ${f16Ref(h)}`);
      }
    }
  });

  it('round-trips all 65536 patterns f16 -> f32 -> f16 (values; NaN stays NaN)', () => {
    for (let h = 0; h < 65536; h++) {
      const back = f32ToF16Bits(f16BitsToF32(h));
      if (isF16NaN(h) ? !isF16NaN(back) : back !== h)
        throw new Error(`0x${h.toString(16)} -> 0x${back.toString(16)}`);
    }
  });

  it('round-trips all 65536 patterns on bits, NaN payloads included', () => {
    for (let h = 0; h < 65536; h++) {
      const back = f32BitsToF16Bits(f16BitsToF32Bits(h));
      if (back !== h) throw new Error(`0x${h.toString(16)} -> 0x${back.toString(16)}`);
    }
  });

  it('decodes known values', () => {
    expect(f16BitsToF32(0x3c00)).toBe(1);
    expect(f16BitsToF32(0xc000)).toBe(-2);
    expect(f16BitsToF32(0x7bff)).toBe(65504);
    expect(f16BitsToF32(0x0001)).toBe(2 ** -24);
    expect(f16BitsToF32(0x03ff)).toBe(1023 * 2 ** -24);
    expect(f16BitsToF32(0x0400)).toBe(2 ** -14);
    expect(f16BitsToF32(0x7c00)).toBe(Number.POSITIVE_INFINITY);
    expect(f16BitsToF32(0xfc00)).toBe(Number.NEGATIVE_INFINITY);
    expect(Object.is(f16BitsToF32(0x8000), -0)).toBe(true);
    expect(f16BitsToF32(0x7e00)).toBeNaN();
    expect(f16BitsToF32(0x3555)).toBe(0.333251953125);
  });

  it('rounds to nearest even on hand-made ties', () => {
    expect(f32ToF16Bits(1 + 2 ** -11)).toBe(0x3c00); // tie between 0x3c00 and 0x3c01 -> even
    expect(f32ToF16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie between 0x3c01 and 0x3c02 -> even
    expect(f32ToF16Bits(1 + 2 ** -11 + 2 ** -20)).toBe(0x3c01); // just above the tie
    expect(f32ToF16Bits(1 + 2 ** -11 - 2 ** -23)).toBe(0x3c00); // just below the tie
    expect(f32ToF16Bits(-(1 + 3 * 2 ** -11))).toBe(0xbc02);
    expect(f32ToF16Bits(65519)).toBe(0x7bff); // below the 65520 tie
    expect(f32ToF16Bits(65520)).toBe(0x7c00); // tie between 65504 (odd) and 2^16 -> inf
    expect(f32ToF16Bits(-65520)).toBe(0xfc00);
    expect(f32ToF16Bits(1e10)).toBe(0x7c00);
    expect(f32ToF16Bits(3.4e38)).toBe(0x7c00);
  });

  it('rounds subnormals, underflow and the subnormal/normal border', () => {
    expect(f32ToF16Bits(2 ** -24)).toBe(0x0001);
    expect(f32ToF16Bits(2 ** -25)).toBe(0x0000); // tie between 0 and 1 unit -> even 0
    expect(f32ToF16Bits(2 ** -25 + 2 ** -40)).toBe(0x0001);
    expect(f32ToF16Bits(3 * 2 ** -25)).toBe(0x0002); // tie between 1 and 2 units -> even
    expect(f32ToF16Bits(5 * 2 ** -25)).toBe(0x0002); // tie between 2 and 3 units -> even
    expect(f32ToF16Bits(1023.5 * 2 ** -24)).toBe(0x0400); // tie between 0x3ff and 0x400 -> even
    expect(f32ToF16Bits(-(2 ** -26))).toBe(0x8000);
    expect(f32ToF16Bits(1e-45)).toBe(0x0000); // an f32 subnormal
    expect(f32ToF16Bits(-0)).toBe(0x8000);
    expect(f32ToF16Bits(0)).toBe(0x0000);
  });

  it('keeps inf and NaN', () => {
    expect(f32ToF16Bits(Number.POSITIVE_INFINITY)).toBe(0x7c00);
    expect(f32ToF16Bits(Number.NEGATIVE_INFINITY)).toBe(0xfc00);
    expect(isF16NaN(f32ToF16Bits(Number.NaN))).toBe(true);
    expect(isF16NaN(f32BitsToF16Bits(0x7f800001))).toBe(true); // payload only in the low bits
    expect(f32BitsToF16Bits(0xff800001)).toBe(0xfe00); // sign kept, quiet bit set
  });

  it('matches the reference rounding on 300k random f32 bit patterns', () => {
    const r = mulberry32(12345);
    for (let i = 0; i < 300_000; i++) {
      // mix wide patterns with ones concentrated near the f16 range
      const bits =
        i % 2 === 0
          ? Math.floor(r() * 2 ** 32)
          : ((r() < 0.5 ? 0 : 0x80000000) | (Math.floor(r() * 48 + 95) << 23) | Math.floor(r() * 2 ** 23)) >>>
            0;
      const x = f32FromBits(bits);
      if (Number.isNaN(x)) continue;
      const got = f16BitsToF32(f32BitsToF16Bits(bits));
      const want = roundRef(x, 10, -14, 15);
      if (!Object.is(got, want) && !(got === 0 && want === 0 && Object.is(got, x < 0 ? -0 : 0))) {
        throw new Error(`f32 bits 0x${bits.toString(16)} (${x}): got ${got}, want ${want}`);
      }
    }
  });
});

describe('bf16 conversions', () => {
  it('decodes every bf16 pattern as the high half of an f32', () => {
    for (let h = 0; h < 65536; h++) {
      const v = bf16BitsToF32(h);
      const want = f32FromBits((h << 16) >>> 0);
      if (!(Object.is(v, want) || (Number.isNaN(v) && Number.isNaN(want))))
        throw new Error(`0x${h.toString(16)}`);
    }
  });

  it('round-trips all 65536 patterns (values; bits incl. NaN payloads)', () => {
    for (let h = 0; h < 65536; h++) {
      const nan = (h & 0x7f80) === 0x7f80 && (h & 0x7f) !== 0;
      const v = f32ToBf16Bits(bf16BitsToF32(h));
      if (nan ? (v & 0x7f80) !== 0x7f80 || (v & 0x7f) === 0 : v !== h) throw new Error(`0x${h.toString(16)}`);
      const b = f32BitsToBf16Bits((h << 16) >>> 0);
      if (b !== h) throw new Error(`bits 0x${h.toString(16)} -> 0x${b.toString(16)}`);
    }
  });

  it('rounds to nearest even on the low 16 bits, overflows to inf, keeps NaN NaN', () => {
    expect(f32BitsToBf16Bits(0x3f808000)).toBe(0x3f80); // tie -> even
    expect(f32BitsToBf16Bits(0x3f818000)).toBe(0x3f82); // tie -> even (up)
    expect(f32BitsToBf16Bits(0x3f808001)).toBe(0x3f81);
    expect(f32BitsToBf16Bits(0x3f807fff)).toBe(0x3f80);
    expect(f32BitsToBf16Bits(0xbf818000)).toBe(0xbf82);
    expect(f32BitsToBf16Bits(0x7f7f8000)).toBe(0x7f80); // max finite is odd: the tie goes to inf
    expect(f32BitsToBf16Bits(0x7f7fffff)).toBe(0x7f80);
    expect(f32BitsToBf16Bits(0x7f7f7fff)).toBe(0x7f7f);
    expect(f32BitsToBf16Bits(0x00008000)).toBe(0x0000); // subnormal tie -> even 0
    expect(f32BitsToBf16Bits(0x00018000)).toBe(0x0002);
    expect(f32BitsToBf16Bits(0x7f800000)).toBe(0x7f80);
    expect(f32BitsToBf16Bits(0x7f800001)).toBe(0x7fc0); // NaN with payload in the dropped bits stays NaN
    expect(f32BitsToBf16Bits(0xff800001)).toBe(0xffc0);
    expect(f32BitsToBf16Bits(0x7fc00000)).toBe(0x7fc0);
    expect(f32BitsToBf16Bits(0x7fffffff)).toBe(0x7fff); // would carry into the sign with plain RNE
    expect(f32ToBf16Bits(1)).toBe(0x3f80);
    expect(bf16BitsToF32(0x4049)).toBe(3.140625);
  });

  it('matches the reference rounding on 300k random f32 bit patterns', () => {
    const r = mulberry32(777);
    for (let i = 0; i < 300_000; i++) {
      const bits = Math.floor(r() * 2 ** 32);
      const x = f32FromBits(bits);
      if (Number.isNaN(x)) continue;
      const got = bf16BitsToF32(f32BitsToBf16Bits(bits));
      const want = roundRef(x, 7, -126, 127);
      if (!Object.is(got, want))
        throw new Error(`f32 bits 0x${bits.toString(16)} (${x}): got ${got}, want ${want}`);
    }
  });
});

describe('writer -> reader', () => {
  const shapes = [[3, 5, 7], [1], [], [0, 4], [13], [2, 1, 3]];

  function randomTensors(seed: number, dtypes: DType[]): TensorToWrite[] {
    const r = mulberry32(seed);
    const out: TensorToWrite[] = [];
    shapes.forEach((shape, i) => {
      const dtype = dtypes[i % dtypes.length];
      const n = shape.reduce((a, b) => a * b, 1);
      const data = new Float32Array(n);
      for (let j = 0; j < n; j++) data[j] = (r() - 0.5) * 2 ** Math.floor(r() * 40 - 20);
      out.push({ name: `t${i}.${dtype}`, dtype, shape, data });
    });
    return out;
  }

  function expectRoundTrip(tensors: TensorToWrite[], file: Uint8Array): void {
    const { entries, dataOffset, metadata } = parseSafetensorsHeader(file);
    expect(metadata).toEqual({ format: 'pt' });
    expect([...entries.keys()]).toEqual(tensors.map((t) => t.name));
    for (const t of tensors) {
      const e = entries.get(t.name)!;
      expect(e.dtype).toBe(t.dtype);
      expect(e.shape).toEqual(t.shape);
      const got = readTensorF32(file, dataOffset, e);
      const want = Float32Array.from(t.data, (x) =>
        t.dtype === 'F32'
          ? x
          : t.dtype === 'F16'
            ? f16BitsToF32(f32ToF16Bits(x))
            : bf16BitsToF32(f32ToBf16Bits(x)),
      );
      expect(got).toEqual(want);
      if (t.dtype !== 'F32' && t.data.length > 3) expect(got).not.toEqual(t.data); // rounding did happen
    }
  }

  for (const dtypes of [['F32'], ['F16'], ['BF16'], ['F16', 'F32', 'BF16']] as DType[][]) {
    it(`round-trips ${dtypes.join('+')} at odd shapes`, () => {
      const tensors = randomTensors(dtypes.length * 31 + dtypes[0].length, dtypes);
      const file = writeSafetensors(tensors, { format: 'pt' });
      expectRoundTrip(tensors, file);
    });
  }

  it('reads F32 at unaligned offsets (in the file and in the buffer)', () => {
    const tensors: TensorToWrite[] = [
      { name: 'a', dtype: 'F16', shape: [3], data: new Float32Array([1, 2, 3]) }, // 6 bytes: next one at 6
      { name: 'b', dtype: 'F32', shape: [2, 2], data: new Float32Array([0.1, -2.5, 1e-30, 3e38]) },
    ];
    const file = writeSafetensors(tensors, { format: 'pt' });
    const { entries, dataOffset } = parseSafetensorsHeader(file);
    expect((dataOffset + entries.get('b')!.begin) % 4).toBe(2);
    expectRoundTrip(tensors, file);
    const shifted = new Uint8Array(file.length + 3).subarray(3); // byteOffset 3 in its buffer
    shifted.set(file);
    expect(readTensorF32(shifted, dataOffset, entries.get('b')!)).toEqual(tensors[1].data);
  });

  it('pads the header with spaces to 8-byte alignment', () => {
    for (const name of ['x', 'xy', 'xyz', 'abcd', 'abcde', 'abcdefg']) {
      const file = writeSafetensors([{ name, dtype: 'F32', shape: [1], data: new Float32Array([1]) }]);
      const n = new DataView(file.buffer).getUint32(0, true);
      expect((8 + n) % 8).toBe(0);
      const text = new TextDecoder().decode(file.subarray(8, 8 + n));
      expect(text).toMatch(/^\{.*\} *$/);
      expect(JSON.parse(text)).toEqual({ [name]: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } });
    }
  });

  it('reads a hand-made file byte for byte', () => {
    const header = {
      w: { dtype: 'F16', shape: [2], data_offsets: [0, 4] },
      v: { dtype: 'BF16', shape: [1], data_offsets: [4, 6] },
    };
    const file = rawFile(header, new Uint8Array([0x00, 0x3c, 0x00, 0xc0, 0x49, 0x40]));
    const { entries, dataOffset } = parseSafetensorsHeader(file);
    expect(readTensorF32(file, dataOffset, entries.get('w')!)).toEqual(new Float32Array([1, -2]));
    expect(readTensorF32(file, dataOffset, entries.get('v')!)).toEqual(new Float32Array([3.140625]));
  });

  it('keeps every F16 / BF16 bit pattern through reader and writer (NaN payloads too)', () => {
    for (const dtype of ['F16', 'BF16'] as const) {
      const data = new Uint8Array(2 * 65536);
      for (let h = 0; h < 65536; h++) {
        data[2 * h] = h & 0xff;
        data[2 * h + 1] = h >> 8;
      }
      const file = rawFile({ all: { dtype, shape: [256, 256], data_offsets: [0, data.length] } }, data);
      const { entries, dataOffset } = parseSafetensorsHeader(file);
      const f32 = readTensorF32(file, dataOffset, entries.get('all')!);
      const again = writeSafetensors([{ name: 'all', dtype, shape: [256, 256], data: f32 }]);
      const h2 = parseSafetensorsHeader(again);
      expect(again.subarray(h2.dataOffset)).toEqual(data);
    }
  });

  it('writes F32 data bit-exactly (negative zero, inf, NaN payload)', () => {
    const data = new Float32Array(new Uint32Array([0x80000000, 0x7f800000, 0x7fa00001, 0x00000001]).buffer);
    const file = writeSafetensors([{ name: 'x', dtype: 'F32', shape: [4], data }]);
    const { entries, dataOffset } = parseSafetensorsHeader(file);
    const got = readTensorF32(file, dataOffset, entries.get('x')!);
    expect(Array.from(new Uint32Array(got.buffer))).toEqual([0x80000000, 0x7f800000, 0x7fa00001, 0x00000001]);
    expect(f32Bits(got[3])).toBe(1);
  });

  it('refuses writer misuse with a plain Error', () => {
    expect(() =>
      writeSafetensors([{ name: 'x', dtype: 'F32', shape: [2], data: new Float32Array(3) }]),
    ).toThrow(/3 values/);
    const t = { name: 'x', dtype: 'F32' as const, shape: [1], data: new Float32Array(1) };
    expect(() => writeSafetensors([t, t])).toThrow(/duplicate/);
  });
});

describe('parseSafetensorsHeader: corrupted files', () => {
  const good = { w: { dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] } };

  function entryError(entry: unknown, data = 24): ModelLoadError {
    const e = loadError(() => parseSafetensorsHeader(rawFile({ w: entry }, data)));
    expect(e.key).toBe('w');
    expect(e.message.startsWith("model.safetensors: tensor 'w' ")).toBe(true);
    return e;
  }

  it('accepts the baseline', () => {
    const h = parseSafetensorsHeader(rawFile(good, 24));
    expect(h.entries.get('w')).toEqual({ name: 'w', dtype: 'F32', shape: [2, 3], begin: 0, end: 24 });
    expect(h.metadata).toEqual({});
    expect(h.ignored).toEqual([]);
  });

  it('refuses a truncated file', () => {
    for (const n of [0, 1, 7]) {
      const e = loadError(() => parseSafetensorsHeader(new Uint8Array(n), 'm.safetensors'));
      expect(e.message).toBe(
        `m.safetensors: file is ${n} bytes, too short for a safetensors header (truncated?)`,
      );
      expect(e.file).toBe('m.safetensors');
    }
  });

  it('refuses a header length larger than the file', () => {
    const f = rawFile(good, 24);
    const cut = f.subarray(0, 40);
    expect(loadError(() => parseSafetensorsHeader(cut)).message).toMatch(
      /header length \d+ is larger than the 32 bytes after it/,
    );
    const f2 = f.slice();
    new DataView(f2.buffer).setUint32(0, 1_000_000, true);
    expect(loadError(() => parseSafetensorsHeader(f2)).message).toContain(
      'header length 1000000 is larger than',
    );
  });

  it('refuses a header length over 100 MB (also in the high 32 bits)', () => {
    const f = rawFile(good, 24);
    new DataView(f.buffer).setUint32(0, 100_000_000, true);
    expect(loadError(() => parseSafetensorsHeader(f)).message).toContain(
      'exceeds the limit of 100000000 bytes',
    );
    const g = rawFile(good, 24);
    new DataView(g.buffer).setUint32(4, 1, true);
    expect(loadError(() => parseSafetensorsHeader(g)).message).toContain('exceeds the limit');
  });

  it('refuses a header that is not UTF-8, not JSON, or not an object', () => {
    const bad = rawFile('{"w":1}', 0);
    bad[10] = 0xff;
    expect(loadError(() => parseSafetensorsHeader(bad)).message).toBe(
      'model.safetensors: header is not valid UTF-8',
    );
    expect(loadError(() => parseSafetensorsHeader(rawFile('{"w": {', 0))).message).toMatch(
      /^model\.safetensors: header is not JSON \(/,
    );
    expect(loadError(() => parseSafetensorsHeader(rawFile('', 0))).message).toContain('header is not JSON');
    expect(loadError(() => parseSafetensorsHeader(rawFile([good], 24))).message).toBe(
      'model.safetensors: header must be a JSON object, found an array',
    );
    expect(loadError(() => parseSafetensorsHeader(rawFile('null', 0))).message).toContain('found null');
    expect(loadError(() => parseSafetensorsHeader(rawFile('"x"', 0))).message).toContain("found string 'x'");
  });

  it('refuses bad dtypes, naming tensor and dtype', () => {
    expect(entryError({ ...good.w, dtype: 'F64', data_offsets: [0, 48] }, 48).message).toBe(
      "model.safetensors: tensor 'w' has dtype F64, only F32, F16 and BF16 are supported",
    );
    for (const dt of ['I64', 'U8', 'BOOL', 'F8_E4M3'])
      expect(entryError({ ...good.w, dtype: dt }).message).toContain(`dtype ${dt}`);
    expect(entryError({ ...good.w, dtype: 'Q4_K' }).message).toContain("unknown dtype 'Q4_K'");
    expect(entryError({ ...good.w, dtype: 'f32' }).message).toContain("unknown dtype 'f32'");
    expect(entryError({ shape: [2, 3], data_offsets: [0, 24] }).message).toContain('has no dtype string');
    expect(entryError({ ...good.w, dtype: 32 }).message).toContain('has no dtype string (found number 32)');
  });

  it('refuses a shape / offsets size mismatch', () => {
    expect(entryError({ ...good.w, shape: [3, 3] }, 36).message).toBe(
      "model.safetensors: tensor 'w' has 24 bytes (data_offsets [0,24]) but shape [3,3] F32 needs 36",
    );
    expect(entryError({ ...good.w, dtype: 'F16' }).message).toContain('F16 needs 12');
    expect(entryError({ ...good.w, shape: [2 ** 40, 2 ** 40] }).message).toContain('needs Infinity');
  });

  it('refuses offsets past the end of the data section', () => {
    expect(entryError({ ...good.w, shape: [3, 3], data_offsets: [0, 36] }).message).toBe(
      "model.safetensors: tensor 'w' has data_offsets [0,36] past the end of the data section (24 bytes)",
    );
    const f = rawFile(good, 24);
    expect(loadError(() => parseSafetensorsHeader(f.subarray(0, f.length - 1))).message).toContain(
      "tensor 'w' has data_offsets [0,24] past the end of the data section (23 bytes)",
    );
  });

  it('refuses begin > end and malformed offsets', () => {
    expect(entryError({ ...good.w, data_offsets: [24, 0] }).message).toContain('with begin > end');
    expect(entryError({ ...good.w, data_offsets: [0] }).message).toContain(
      'must have data_offsets [begin, end]',
    );
    expect(entryError({ ...good.w, data_offsets: [0, 24, 48] }).message).toContain('must have data_offsets');
    expect(entryError({ ...good.w, data_offsets: '0,24' }).message).toContain('must have data_offsets');
    expect(entryError({ ...good.w, data_offsets: [-4, 20] }).message).toContain(
      'invalid data_offsets entry number -4',
    );
    expect(entryError({ ...good.w, data_offsets: [0.5, 24] }).message).toContain(
      'invalid data_offsets entry number 0.5',
    );
    expect(entryError({ ...good.w, data_offsets: [0, 2 ** 60] }).message).toContain(
      'invalid data_offsets entry',
    );
  });

  it('refuses negative, fractional and non-numeric shapes', () => {
    expect(entryError({ ...good.w, shape: [-2, -3] }).message).toBe(
      "model.safetensors: tensor 'w' has invalid shape entry number -2 (dimensions are non-negative integers)",
    );
    expect(entryError({ ...good.w, shape: [1.5, 4] }).message).toContain('invalid shape entry number 1.5');
    expect(entryError({ ...good.w, shape: ['2', 3] }).message).toContain("invalid shape entry string '2'");
    expect(entryError({ ...good.w, shape: [null, 3] }).message).toContain('invalid shape entry null');
    expect(entryError({ ...good.w, shape: 6 }).message).toContain('has no shape array (found number 6)');
    expect(entryError({ ...good.w, shape: new Array(65).fill(1), data_offsets: [0, 4] }).message).toContain(
      '65 dimensions',
    );
  });

  it('refuses overlapping tensors', () => {
    const header = {
      a: { dtype: 'F32', shape: [4], data_offsets: [0, 16] },
      b: { dtype: 'F32', shape: [4], data_offsets: [12, 28] },
    };
    const e = loadError(() => parseSafetensorsHeader(rawFile(header, 28)));
    expect(e.message).toBe("model.safetensors: tensor 'b' (bytes 12..28) overlaps tensor 'a' (bytes 0..16)");
    expect(e.key).toBe('b');
    const same = { a: header.a, b: { ...header.a } };
    expect(loadError(() => parseSafetensorsHeader(rawFile(same, 16))).message).toContain('overlaps');
    // touching is fine, and so are empty tensors
    const touching = {
      a: header.a,
      b: { dtype: 'F32', shape: [3], data_offsets: [16, 28] },
      z: { dtype: 'F16', shape: [0], data_offsets: [16, 16] },
    };
    expect([...parseSafetensorsHeader(rawFile(touching, 28)).entries.keys()]).toEqual(['a', 'b', 'z']);
  });

  it('refuses gaps, a data section not starting at 0, and trailing bytes (the format packs tensors)', () => {
    const a = { dtype: 'F32', shape: [4], data_offsets: [0, 16] };
    const gap = { a, b: { dtype: 'F32', shape: [3], data_offsets: [20, 32] } };
    expect(loadError(() => parseSafetensorsHeader(rawFile(gap, 32))).message).toBe(
      "model.safetensors: 4 unlisted bytes (16..20) between tensor 'a' and tensor 'b': tensors must be packed without gaps",
    );
    const late = { a: { ...a, data_offsets: [2, 18] } };
    const lateErr = loadError(() => parseSafetensorsHeader(rawFile(late, 18)));
    expect(lateErr.message).toContain('2 unlisted bytes (0..2) between the start of the data section');
    expect(lateErr.key).toBe('a');
    const file = rawFile({ a }, 16);
    const longer = new Uint8Array(file.length + 3);
    longer.set(file);
    expect(loadError(() => parseSafetensorsHeader(longer)).message).toBe(
      `model.safetensors: file is ${longer.length} bytes but the header's tensors end at byte ${file.length} (3 trailing bytes)`,
    );
  });

  it('refuses a tensor name listed twice (JSON.parse would keep the last copy)', () => {
    const a = '{"dtype":"F32","shape":[1],"data_offsets":[0,4]}';
    const b = '{"dtype":"F32","shape":[1],"data_offsets":[4,8]}';
    for (const [json, dup] of [
      [`{"w":${a},"w":${b}}`, 'w'],
      [`{"w":${a}, "x":${b}, "\u0077" :${b}}`, 'w'], // escaped spelling of the same name
      [`{"__metadata__":{"k":"v"},"__metadata__":{"k":"w"},"w":${a}}`, '__metadata__'],
    ] as const) {
      const text = new TextEncoder().encode(json);
      const bytes = new Uint8Array(8 + text.length + 8);
      new DataView(bytes.buffer).setUint32(0, text.length, true);
      bytes.set(text, 8);
      const e = loadError(() => parseSafetensorsHeader(bytes));
      expect(e.message).toBe(
        `model.safetensors: header entry '${dup}' appears twice (readers disagree on which copy wins)`,
      );
      expect(e.key).toBe(dup);
    }
    // the same name nested inside an entry is not a duplicate key of the header
    const nested = `{"__metadata__":{"w":"1"},"w":${a}}`;
    const text = new TextEncoder().encode(nested);
    const ok = new Uint8Array(8 + text.length + 4);
    new DataView(ok.buffer).setUint32(0, text.length, true);
    ok.set(text, 8);
    expect([...parseSafetensorsHeader(ok).entries.keys()]).toEqual(['w']);
  });

  it('refuses unknown entry keys and non-object entries', () => {
    expect(entryError({ ...good.w, offsets: [0, 24] }).message).toBe(
      "model.safetensors: tensor 'w' has unexpected header key 'offsets'",
    );
    expect(entryError([1, 2]).message).toContain('header entry must be an object, found an array');
    expect(entryError('F32').message).toContain("found string 'F32'");
  });

  it('reads __metadata__ and refuses a malformed one', () => {
    const h = parseSafetensorsHeader(rawFile({ __metadata__: { format: 'pt', note: 'x' }, ...good }, 24));
    expect(h.metadata).toEqual({ format: 'pt', note: 'x' });
    expect(h.entries.has('__metadata__')).toBe(false);
    const e1 = loadError(() => parseSafetensorsHeader(rawFile({ __metadata__: ['pt'], ...good }, 24)));
    expect(e1.message).toBe('model.safetensors: __metadata__ must be an object, found an array');
    const e2 = loadError(() => parseSafetensorsHeader(rawFile({ __metadata__: { format: 1 }, ...good }, 24)));
    expect(e2.message).toBe(
      "model.safetensors: __metadata__ value 'format' must be a string, found number 1",
    );
  });

  it('keeps hostile tensor names to one bounded line', () => {
    const name = `evil\nname${'x'.repeat(1000)}`;
    const e = loadError(() => parseSafetensorsHeader(rawFile({ [name]: { ...good.w, dtype: 'F64' } }, 24)));
    expect(e.message).not.toContain('\n');
    expect(e.message.length).toBeLessThan(300);
    expect(e.key).toBe(name);
  });

  it('validates ignored tensors structurally but lets them have any known dtype', () => {
    const header = {
      mask: { dtype: 'BOOL', shape: [1, 1, 4, 4], data_offsets: [0, 16] },
      ...{ w: { dtype: 'F32', shape: [2, 3], data_offsets: [16, 40] } },
    };
    const h = parseSafetensorsHeader(rawFile(header, 40), 'model.safetensors', {
      ignore: (n) => n === 'mask',
    });
    expect(h.ignored).toEqual(['mask']);
    expect([...h.entries.keys()]).toEqual(['w']);
    const overlap = {
      ...header,
      mask: { ...header.mask, data_offsets: [0, 16], shape: [1, 1, 4, 4] },
      w: { ...header.w, data_offsets: [8, 32] },
    };
    expect(
      loadError(() => parseSafetensorsHeader(rawFile(overlap, 40), 'm', { ignore: (n) => n === 'mask' }))
        .message,
    ).toContain('overlaps');
    const wrongSize = { mask: { ...header.mask, shape: [5] } };
    expect(
      loadError(() => parseSafetensorsHeader(rawFile(wrongSize, 16), 'm', { ignore: () => true })).message,
    ).toContain('BOOL needs 5');
    expect(loadError(() => parseSafetensorsHeader(rawFile(header, 40))).message).toContain(
      "tensor 'mask' has dtype BOOL",
    );
  });
});
