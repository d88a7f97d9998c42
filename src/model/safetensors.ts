// safetensors: the validating header parser. Reading a tensor as fp32 (F32 / F16 / BF16 on disk) is in
// safetensors-read.ts, writing a file in safetensors-write.ts, the scalar f16 / bf16 conversions in
// src/numeric/bits.ts.
//
// Layout: u64 little-endian header length N, then N bytes of UTF-8 JSON
// `{ "__metadata__"?: {str: str}, name: { dtype, shape, data_offsets: [begin, end] } }`, then the data
// section; offsets are relative to its start.

import type { DType } from '../numeric/types';
import { describeJson, ModelLoadError, quoteName } from './errors';
import { checkNoDuplicateKeys } from './json-text';

export interface SafetensorsEntry {
  name: string;
  dtype: DType;
  shape: number[];
  /** Byte offsets relative to the data section, end exclusive. */
  begin: number;
  end: number;
}

export interface SafetensorsHeader {
  entries: Map<string, SafetensorsEntry>;
  /** Absolute byte offset of the data section: 8 + header length. */
  dataOffset: number;
  metadata: Record<string, string>;
  /** Tensors the caller asked to ignore (validated for size and overlap, never read), by name. */
  ignored: string[];
}

export interface ParseOptions {
  /**
   * Tensors to validate structurally but not read (e.g. HF's causal-mask buffers, stored as BOOL): they may have
   * any dtype of the format and are left out of `entries`.
   */
  ignore?: (name: string) => boolean;
}

/** Headers past this are refused (the reference implementation uses the same bound). */
export const MAX_HEADER_BYTES = 100_000_000;

export const BYTES_PER_ELEMENT: Record<DType, number> = { F32: 4, F16: 2, BF16: 2 };

/** Dtypes of the safetensors format that exist but that we do not read, with their bits per element. */
const OTHER_DTYPE_BITS: Record<string, number> = {
  F64: 64,
  I64: 64,
  U64: 64,
  C64: 64,
  I32: 32,
  U32: 32,
  I16: 16,
  U16: 16,
  I8: 8,
  U8: 8,
  BOOL: 8,
  F8_E4M3: 8,
  F8_E5M2: 8,
  F8_E8M0: 8,
  F6_E2M3: 6,
  F6_E3M2: 6,
  F4: 4,
};

const ENTRY_KEYS = new Set(['dtype', 'shape', 'data_offsets']);

// ---- header ------------------------------------------------------------------------------------------------

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Product of a shape, or Infinity when it leaves the safe-integer range. */
export function numElements(shape: readonly number[]): number {
  let n = 1;
  for (const s of shape) {
    n *= s;
    if (n > Number.MAX_SAFE_INTEGER) return Number.POSITIVE_INFINITY;
  }
  return n;
}

export function shapeStr(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}

/** A validated header entry; dtype is one we read unless the caller ignores the tensor. */
interface RawEntry {
  name: string;
  dtype: string;
  shape: number[];
  begin: number;
  end: number;
}

function parseEntry(
  file: string,
  name: string,
  v: unknown,
  dataSize: number | null,
  ignored: boolean,
): RawEntry {
  const fail = (detail: string): never => {
    throw new ModelLoadError(file, `tensor ${quoteName(name)} ${detail}`, name);
  };
  if (!isObject(v)) return fail(`header entry must be an object, found ${describeJson(v)}`);
  for (const k of Object.keys(v)) {
    if (!ENTRY_KEYS.has(k)) fail(`has unexpected header key ${quoteName(k)}`);
  }
  const dtype = v.dtype;
  if (typeof dtype !== 'string') return fail(`has no dtype string (found ${describeJson(dtype)})`);
  let bits: number;
  if (dtype === 'F32' || dtype === 'F16' || dtype === 'BF16') bits = 8 * BYTES_PER_ELEMENT[dtype];
  else if (Object.hasOwn(OTHER_DTYPE_BITS, dtype)) {
    if (!ignored) fail(`has dtype ${dtype}, only F32, F16 and BF16 are supported`);
    bits = OTHER_DTYPE_BITS[dtype];
  } else return fail(`has unknown dtype ${quoteName(dtype.length > 20 ? `${dtype.slice(0, 20)}…` : dtype)}`);
  const shape = v.shape;
  if (!Array.isArray(shape)) return fail(`has no shape array (found ${describeJson(shape)})`);
  if (shape.length > 64) fail(`has ${shape.length} dimensions`);
  for (const s of shape) {
    if (typeof s !== 'number' || !Number.isSafeInteger(s) || s < 0) {
      fail(`has invalid shape entry ${describeJson(s)} (dimensions are non-negative integers)`);
    }
  }
  const offs = v.data_offsets;
  if (!Array.isArray(offs) || offs.length !== 2) {
    return fail(`must have data_offsets [begin, end] (found ${describeJson(offs)})`);
  }
  for (const o of offs) {
    if (typeof o !== 'number' || !Number.isSafeInteger(o) || o < 0) {
      fail(`has invalid data_offsets entry ${describeJson(o)}`);
    }
  }
  const [begin, end] = offs as number[];
  if (begin > end) fail(`has data_offsets [${begin},${end}] with begin > end`);
  if (dataSize !== null && end > dataSize) {
    fail(`has data_offsets [${begin},${end}] past the end of the data section (${dataSize} bytes)`);
  }
  const n = numElements(shape as number[]);
  if (bits % 8 === 0) {
    const expected = n * (bits / 8);
    if (end - begin !== expected) {
      fail(
        `has ${end - begin} bytes (data_offsets [${begin},${end}]) but shape ${shapeStr(shape as number[])} ` +
          `${dtype} needs ${expected}`,
      );
    }
  }
  return { name, dtype, shape: (shape as number[]).slice(), begin, end };
}

/** The u64 little-endian header length at `prefix[0..8)`, refused past MAX_HEADER_BYTES. */
export function readHeaderLength(prefix: Uint8Array, file = 'model.safetensors'): number {
  const dv = new DataView(prefix.buffer, prefix.byteOffset, 8);
  const lo = dv.getUint32(0, true);
  const hi = dv.getUint32(4, true);
  const n = hi * 2 ** 32 + lo; // exact below 2^53; above, only compared against the limit
  if (n >= MAX_HEADER_BYTES) {
    throw new ModelLoadError(file, `header length ${n} exceeds the limit of ${MAX_HEADER_BYTES} bytes`);
  }
  return n;
}

/** The refusal of a header length that runs past the bytes after it (`available` = file length - 8). */
export function headerPastEndError(n: number, available: number, file: string): ModelLoadError {
  return new ModelLoadError(
    file,
    `header length ${n} is larger than the ${available} bytes after it (truncated or not safetensors)`,
  );
}

/** The refusal of a file shorter than the 8-byte length prefix. */
export function tooShortError(length: number, file: string): ModelLoadError {
  return new ModelLoadError(file, `file is ${length} bytes, too short for a safetensors header (truncated?)`);
}

/** A parsed header plus where its tensors end (shared by the whole-file and the streaming readers). */
export interface HeaderSection {
  header: SafetensorsHeader;
  /** The end of the last tensor (ignored ones included), relative to the data section: its declared size. */
  dataEnd: number;
  /** Every tensor, ignored ones included, sorted by offset (begin, then end). */
  sorted: { name: string; begin: number; end: number; ignored: boolean }[];
}

/**
 * Validates the header JSON bytes (`json`, the n bytes after the length prefix). `dataSize` is the length of
 * the data section when known (offsets past it are refused); null when it is not known yet (a stream of
 * unknown length), in which case the caller checks the data against `dataEnd`.
 */
export function parseHeaderSection(
  json: Uint8Array,
  dataSize: number | null,
  file = 'model.safetensors',
  options: ParseOptions = {},
): HeaderSection {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(json);
  } catch {
    throw new ModelLoadError(file, 'header is not valid UTF-8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    const why = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' '); // V8 quotes the text: keep one line
    throw new ModelLoadError(file, `header is not JSON (${why})`);
  }
  if (!isObject(parsed))
    throw new ModelLoadError(file, `header must be a JSON object, found ${describeJson(parsed)}`);
  // JSON.parse keeps the last copy of a repeated name; the format (and its reference parser) refuses it.
  checkNoDuplicateKeys(text, file, 'header entry');

  const metadata: Record<string, string> = {};
  const entries = new Map<string, SafetensorsEntry>();
  const ignored: string[] = [];
  const all: RawEntry[] = [];
  const ignoredSet = new Set<string>();
  for (const [name, v] of Object.entries(parsed)) {
    if (name === '__metadata__') {
      if (!isObject(v)) {
        throw new ModelLoadError(file, `__metadata__ must be an object, found ${describeJson(v)}`, name);
      }
      for (const [k, s] of Object.entries(v)) {
        if (typeof s !== 'string') {
          throw new ModelLoadError(
            file,
            `__metadata__ value ${quoteName(k)} must be a string, found ${describeJson(s)}`,
            name,
          );
        }
        metadata[k] = s;
      }
      continue;
    }
    const skip = options.ignore?.(name) ?? false;
    const e = parseEntry(file, name, v, dataSize, skip);
    all.push(e);
    if (skip) {
      ignored.push(name);
      ignoredSet.add(name);
    } else entries.set(name, e as SafetensorsEntry);
  }

  // The format packs tensors without gaps from offset 0 (the reference parser refuses anything else): unlisted
  // bytes between tensors are data no reader accounts for.
  const sorted = all.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let dataEnd = 0;
  for (let i = 0; i < sorted.length; i++) {
    const cur = sorted[i];
    if (i > 0) {
      const prev = sorted[i - 1];
      if (cur.begin < prev.end) {
        throw new ModelLoadError(
          file,
          `tensor ${quoteName(cur.name)} (bytes ${cur.begin}..${cur.end}) overlaps tensor ${quoteName(prev.name)} ` +
            `(bytes ${prev.begin}..${prev.end})`,
          cur.name,
        );
      }
    }
    if (cur.begin > dataEnd) {
      const before = i === 0 ? 'the start of the data section' : `tensor ${quoteName(sorted[i - 1].name)}`;
      throw new ModelLoadError(
        file,
        `${cur.begin - dataEnd} unlisted bytes (${dataEnd}..${cur.begin}) between ${before} and tensor ` +
          `${quoteName(cur.name)}: tensors must be packed without gaps`,
        cur.name,
      );
    }
    dataEnd = Math.max(dataEnd, cur.end);
  }
  const dataOffset = 8 + json.length;
  if (dataSize !== null && dataEnd !== dataSize) {
    throw new ModelLoadError(
      file,
      `file is ${dataOffset + dataSize} bytes but the header's tensors end at byte ${dataOffset + dataEnd} ` +
        `(${dataSize - dataEnd} trailing bytes)`,
    );
  }
  return {
    header: { entries, dataOffset, metadata, ignored },
    dataEnd,
    sorted: sorted.map((e) => ({
      name: e.name,
      begin: e.begin,
      end: e.end,
      ignored: ignoredSet.has(e.name),
    })),
  };
}

/**
 * Parses and validates a safetensors header. Everything malformed (sizes, JSON, dtypes, shapes, offsets,
 * overlaps) raises ModelLoadError naming the file and the tensor.
 */
export function parseSafetensorsHeader(
  bytes: Uint8Array,
  file = 'model.safetensors',
  options: ParseOptions = {},
): SafetensorsHeader {
  if (bytes.length < 8) throw tooShortError(bytes.length, file);
  const n = readHeaderLength(bytes, file);
  if (n > bytes.length - 8) throw headerPastEndError(n, bytes.length - 8, file);
  return parseHeaderSection(bytes.subarray(8, 8 + n), bytes.length - 8 - n, file, options).header;
}
