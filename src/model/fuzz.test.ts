// Seeded fuzzing of the model-file readers: mutated model.safetensors files and config.json texts must each end
// in a valid load (parseConfigText + loadWeights) or in exactly one ModelLoadError with a one-line message, never
// another exception, never a hang; a subset goes through streamSafetensors with random chunking too.
//
// A failure names its seed; `FUZZ_SEED=<seed> npx vitest run src/model/fuzz.test.ts` replays that one case.

import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../numeric/random';
import type { DType } from '../numeric/types';
import { parseConfigText } from './config';
import { ModelLoadError } from './errors';
import { type RandomModelSpec, randomConfigJson, randomTensors } from './random-model';
import { MAX_HEADER_BYTES, parseHeaderSection, parseSafetensorsHeader } from './safetensors';
import { readTensorF32 } from './safetensors-read';
import { type TensorToWrite, writeSafetensors } from './safetensors-write';
import { streamSafetensors } from './stream';
import { loadWeights } from './weights';

const SAFETENSORS_CASES = 8000;
const CONFIG_CASES = 4000;
const STREAM_CASES = 2000;
/** Time box of one case (generous: a slow 2-core machine with GC pauses). */
const CASE_MS = 1500;

const REPLAY = process.env.FUZZ_SEED === undefined ? null : Number(process.env.FUZZ_SEED);

/** The seeds of a group: g * 2^24 + i, or only the replayed one. */
function seeds(group: number, count: number): number[] {
  if (REPLAY !== null) return [REPLAY];
  return Array.from({ length: count }, (_, i) => group * 0x1000000 + i);
}

// ---- random helpers ----------------------------------------------------------------------------------------

class Rng {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  float(): number {
    return this.next();
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)];
  }
}

type Json = Record<string, unknown>;

// ---- base models -------------------------------------------------------------------------------------------

interface Base {
  name: string;
  config: string;
  bytes: Uint8Array;
}

/** HF buffers loadWeights ignores (the same pattern as weights.ts). */
const IGNORED_BUFFER =
  /^gpt_neox\.(layers\.\d+\.attention\.(bias|masked_bias|rotary_emb\.inv_freq)|rotary_emb\.inv_freq)$/;
const ignore = (name: string) => IGNORED_BUFFER.test(name);

function split(bytes: Uint8Array): { header: Json; data: Uint8Array } | null {
  if (bytes.length < 8) return null;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = dv.getUint32(0, true) + dv.getUint32(4, true) * 2 ** 32;
  if (n > bytes.length - 8) return null;
  try {
    const header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
    if (typeof header !== 'object' || header === null || Array.isArray(header)) return null;
    return { header, data: bytes.slice(8 + n) };
  } catch {
    return null;
  }
}

/** A file from header text (UTF-8, or raw bytes) and a data section; `len` overrides the length prefix. */
function joinRaw(header: string | Uint8Array, data: Uint8Array, len?: number): Uint8Array {
  const json = typeof header === 'string' ? new TextEncoder().encode(header) : header;
  const out = new Uint8Array(8 + json.length + data.length);
  const dv = new DataView(out.buffer);
  const n = len ?? json.length;
  dv.setUint32(0, n % 2 ** 32, true);
  dv.setUint32(4, Math.floor(n / 2 ** 32), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

const join = (header: unknown, data: Uint8Array) => joinRaw(JSON.stringify(header), data);

const SPEC: RandomModelSpec = { vocab: 8, d: 8, layers: 2, heads: 2, ff: 16, rotaryPct: 0.5, parallel: true };

function makeBases(): Base[] {
  const bases: Base[] = [];
  const add = (
    name: string,
    cfg: Json,
    tensors: TensorToWrite[],
    extra?: (h: Json, d: Uint8Array) => Uint8Array,
  ) => {
    let bytes = writeSafetensors(tensors, { format: 'pt' });
    if (extra !== undefined) {
      const s = split(bytes)!;
      bytes = extra(s.header, s.data);
    }
    bases.push({ name, config: JSON.stringify(cfg, null, 2), bytes });
  };
  add('f32-classic', randomConfigJson(SPEC), randomTensors(SPEC, 1));
  const f16: RandomModelSpec = {
    ...SPEC,
    layers: 1,
    dtype: 'F16',
    keys: 'rope_parameters',
    head: 'lm_head.weight',
  };
  add('f16-rope-params', randomConfigJson(f16), randomTensors(f16, 2));
  const bf16: RandomModelSpec = { ...SPEC, layers: 1, dtype: 'BF16', parallel: false };
  add('bf16-sequential', randomConfigJson(bf16), randomTensors(bf16, 3));
  const tied = { ...SPEC, layers: 1 };
  add(
    'tied',
    { ...randomConfigJson(tied), tie_word_embeddings: true },
    randomTensors(tied, 4).filter((t) => t.name !== 'embed_out.weight'),
  );
  add(
    'no-attention-bias',
    { ...randomConfigJson(tied), attention_bias: false },
    randomTensors(tied, 5).filter((t) => !/attention\.(query_key_value|dense)\.bias$/.test(t.name)),
  );
  // HF buffers: a BOOL causal mask, a scalar masked_bias and inv_freq, appended after the weights.
  add('hf-buffers', randomConfigJson(tied), randomTensors(tied, 6), (h, data) => {
    const end = data.length;
    h['gpt_neox.layers.0.attention.bias'] = {
      dtype: 'BOOL',
      shape: [1, 1, 4, 4],
      data_offsets: [end, end + 16],
    };
    h['gpt_neox.layers.0.attention.masked_bias'] = {
      dtype: 'F32',
      shape: [],
      data_offsets: [end + 16, end + 20],
    };
    h['gpt_neox.rotary_emb.inv_freq'] = { dtype: 'F32', shape: [1], data_offsets: [end + 20, end + 24] };
    const d = new Uint8Array(end + 24);
    d.set(data);
    d.fill(1, end, end + 16);
    return join(h, d);
  });
  return bases;
}

// ---- safetensors mutations ---------------------------------------------------------------------------------

const DTYPES: unknown[] = [
  'F32',
  'F16',
  'BF16',
  'BOOL',
  'I8',
  'U8',
  'I64',
  'F64',
  'F8_E4M3',
  'F6_E2M3',
  'F4',
  'f32',
  '',
  'F32 ',
  'X'.repeat(300),
  1,
  null,
  ['F32'],
];

const ODD_NUMBERS: unknown[] = [
  -1,
  0,
  1,
  1.5,
  -0.5,
  2 ** 31,
  2 ** 32,
  2 ** 53 - 1,
  2 ** 53,
  2 ** 53 + 2,
  1e20,
  1e300,
  -1e300,
  5e-324,
  '4',
  null,
  true,
  [],
  {},
];

function headerLen(bytes: Uint8Array): number {
  if (bytes.length < 8) return 0;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, 8);
  return Math.min(dv.getUint32(0, true) + dv.getUint32(4, true) * 2 ** 32, bytes.length - 8);
}

function tensorNames(h: Json): string[] {
  return Object.keys(h).filter((k) => k !== '__metadata__');
}

/** All tensors of a valid file as fp32 (for consistent rewrites). */
function decodeAll(bytes: Uint8Array): TensorToWrite[] {
  const h = parseSafetensorsHeader(bytes, 'model.safetensors', { ignore });
  return [...h.entries.values()]
    .sort((a, b) => a.begin - b.begin)
    .map((e) => ({
      name: e.name,
      dtype: e.dtype,
      shape: e.shape,
      data: readTensorF32(bytes, h.dataOffset, e),
    }));
}

type Mutator = (r: Rng, bytes: Uint8Array, base: Base) => [string, Uint8Array];

/** A mutation of the parsed header; falls back to a bit flip when the header no longer parses. */
function structural(fn: (r: Rng, h: Json, data: Uint8Array) => [string, Uint8Array]): Mutator {
  return (r, bytes, base) => {
    const s = split(bytes);
    if (s === null || tensorNames(s.header).length === 0) return bitflip(r, bytes, base);
    try {
      return fn(r, s.header, s.data);
    } catch (e) {
      if (e instanceof RangeError) return bitflip(r, bytes, base); // a header nested too deep to re-serialise
      throw e;
    }
  };
}

const bitflip: Mutator = (r, bytes) => {
  const out = bytes.slice();
  const k = 1 + r.int(8);
  const hl = 8 + headerLen(bytes);
  for (let i = 0; i < k && out.length > 0; i++) {
    const p = r.chance(0.6) ? r.int(Math.max(1, Math.min(hl, out.length))) : r.int(out.length);
    out[p] ^= 1 << r.int(8);
  }
  return [`bitflip x${k}`, out];
};

const MUTATORS: [string, number, Mutator][] = [
  [
    'truncate',
    1,
    (r, bytes) => {
      const hl = 8 + headerLen(bytes);
      const cut = r.chance(0.4) ? r.int(Math.min(hl + 1, bytes.length)) : r.int(bytes.length);
      return [`truncate to ${cut}`, bytes.slice(0, cut)];
    },
  ],
  [
    'append',
    0.5,
    (r, bytes) => {
      const k = 1 + r.int(70);
      const out = new Uint8Array(bytes.length + k);
      out.set(bytes);
      for (let i = bytes.length; i < out.length; i++) out[i] = r.int(256);
      return [`append ${k}`, out];
    },
  ],
  ['bitflip', 1.5, bitflip],
  [
    'header-bytes',
    1,
    (r, bytes) => {
      const out = bytes.slice();
      const hl = headerLen(bytes);
      const k = 1 + r.int(4);
      const vals = [
        0, 0xff, 0x22, 0x7b, 0x7d, 0x5b, 0x5d, 0x2c, 0x3a, 0x2d, 0x2e, 0x65, 0x80, 0xc0, 0xed, 0x20, 0x5c,
      ];
      for (let i = 0; i < k && hl > 0; i++)
        out[8 + r.int(hl)] = r.chance(0.5) ? r.pick(vals) : 0x30 + r.int(10);
      return [`header bytes x${k}`, out];
    },
  ],
  [
    'header-length',
    1,
    (r, bytes) => {
      const n = headerLen(bytes);
      const len = bytes.length;
      const lo = (v: number) => v % 2 ** 32;
      const hi = (v: number) => Math.floor(v / 2 ** 32);
      const choices: [number, number][] = [
        [0, 0],
        [1, 0],
        [7, 0],
        [8, 0],
        [lo(n - 1), 0],
        [n + 1, 0],
        [n + 8, 0],
        [len, 0],
        [len - 8, 0],
        [len - 7, 0],
        [n, 1],
        [lo(2 ** 53), hi(2 ** 53)],
        [1, hi(2 ** 53)],
        [0xffffffff, 0xffffffff],
        [0xffffffff, 0],
        [MAX_HEADER_BYTES - 1, 0],
        [MAX_HEADER_BYTES, 0],
        [MAX_HEADER_BYTES + 1, 0],
        [r.int(2 ** 32), 0],
        [r.int(2 ** 32), r.int(2 ** 32)],
        [r.int(len + 16), 0],
      ];
      const [l, h] = r.pick(choices);
      const out = bytes.length >= 8 ? bytes.slice() : new Uint8Array(8);
      new DataView(out.buffer).setUint32(0, l >>> 0, true);
      new DataView(out.buffer).setUint32(4, h >>> 0, true);
      return [`header length lo=${l} hi=${h}`, out];
    },
  ],
  [
    'offsets',
    1.5,
    structural((r, h, data) => {
      const name = r.pick(tensorNames(h));
      const e = h[name] as Json;
      const offs = Array.isArray(e.data_offsets) ? (e.data_offsets as unknown[]).slice() : [0, 0];
      const deltas = [-8, -4, -3, -2, -1, 1, 2, 3, 4, 8, 100, -100];
      const op = r.int(9);
      let what: string;
      if (op === 0) {
        e.data_offsets = [offs[1], offs[0]];
        what = 'swap';
      } else if (op === 1) {
        const d = r.pick(deltas);
        e.data_offsets = [(offs[0] as number) + d, offs[1]];
        what = `begin ${d}`;
      } else if (op === 2) {
        const d = r.pick(deltas);
        e.data_offsets = [offs[0], (offs[1] as number) + d];
        what = `end ${d}`;
      } else if (op === 3) {
        const d = r.pick(deltas);
        e.data_offsets = [(offs[0] as number) + d, (offs[1] as number) + d];
        what = `shift ${d}`;
      } else if (op === 4) {
        const v = r.pick(ODD_NUMBERS);
        const i = r.int(2);
        offs[i] = v;
        e.data_offsets = offs;
        what = `[${i}] = ${JSON.stringify(v)}`;
      } else if (op === 5) {
        e.data_offsets = r.pick<unknown>([[], [0], [0, 0, 0], null, '0,4', { 0: 0, 1: 4 }, [0, 0]]);
        what = `= ${JSON.stringify(e.data_offsets)}`;
      } else if (op === 6) {
        delete e.data_offsets;
        what = 'deleted';
      } else if (op === 7) {
        // Moved to the end of the data section, bytes copied: a valid file.
        const [b, en] = offs as number[];
        const out = new Uint8Array(data.length + (en - b));
        out.set(data);
        out.set(data.subarray(b, en), data.length);
        e.data_offsets = [data.length, data.length + en - b];
        return [`offsets ${name}: moved to the end`, join(h, out)];
      } else {
        // Copy another tensor's offsets (overlap, or a size mismatch).
        const other = h[r.pick(tensorNames(h))] as Json;
        e.data_offsets = other.data_offsets;
        what = 'copied from another tensor';
      }
      return [`offsets ${name}: ${what}`, join(h, data)];
    }),
  ],
  [
    'dtype',
    1,
    (r, bytes, base) => {
      if (r.chance(0.35) && bytes === base.bytes) {
        // Consistent: every tensor rewritten in random dtypes (values rounded): a valid file.
        const ts = decodeAll(bytes).map((t) => ({ ...t, dtype: r.pick<DType>(['F32', 'F16', 'BF16']) }));
        return ['dtype: consistent rewrite', writeSafetensors(ts)];
      }
      return structural((r2, h, data) => {
        const name = r2.pick(tensorNames(h));
        const e = h[name] as Json;
        e.dtype = r2.pick(DTYPES);
        return [`dtype ${name} = ${JSON.stringify(e.dtype).slice(0, 20)}`, join(h, data)];
      })(r, bytes, base);
    },
  ],
  [
    'shape',
    1.5,
    structural((r, h, data) => {
      const name = r.pick(tensorNames(h));
      const e = h[name] as Json;
      const shape = Array.isArray(e.shape) ? (e.shape as unknown[]).slice() : [];
      const op = r.int(8);
      let what: string;
      if (op === 0 && shape.length > 0) {
        const i = r.int(shape.length);
        shape[i] = (shape[i] as number) + r.pick([-1, 1, 2, -2]);
        what = `dim ${i} +-`;
      } else if (op === 1 && shape.length > 1) {
        shape.reverse();
        what = 'reversed';
      } else if (op === 2) {
        shape.splice(r.int(shape.length + 1), 0, 1);
        what = 'dim 1 inserted';
      } else if (op === 3 && shape.length > 0) {
        shape.splice(r.int(shape.length), 1);
        what = 'dim removed';
      } else if (op === 4 && shape.length > 0) {
        const i = r.int(shape.length);
        shape[i] = r.pick(ODD_NUMBERS);
        what = `dim ${i} = ${JSON.stringify(shape[i])}`;
      } else if (op === 5) {
        e.shape = r.pick<unknown>([
          [],
          null,
          'x',
          {},
          new Array(65).fill(1),
          [2 ** 30, 2 ** 30, 2 ** 30],
          [2 ** 40, 2 ** 40, 0],
          [0, 2 ** 53 - 1],
          [1e300],
        ]);
        return [`shape ${name} = ${JSON.stringify(e.shape).slice(0, 30)}`, join(h, data)];
      } else if (op === 6) {
        delete e.shape;
        return [`shape ${name} deleted`, join(h, data)];
      } else {
        shape.push(0);
        what = 'zero dim appended';
      }
      e.shape = shape;
      return [`shape ${name}: ${what}`, join(h, data)];
    }),
  ],
  [
    'entries',
    1.5,
    structural((r, h, data) => {
      const names = tensorNames(h);
      const name = r.pick(names);
      const op = r.int(8);
      if (op === 0) {
        delete h[name];
        return [`entry ${name} deleted`, join(h, data)];
      }
      if (op === 1) {
        const to = r.pick([
          name.replace(/\d+/, '7'),
          name.replace('weight', 'bias'),
          `${name}.x`,
          '',
          'embed_out.weight',
          'lm_head.weight',
          'gpt_neox.layers.0.attention.bias',
          'gpt_neox.layers.5.mlp.dense_h_to_4h.weight',
          '\u0000\n\u{1f600}',
          'n'.repeat(5000),
        ]);
        const e = h[name];
        delete h[name];
        h[to] = e;
        return [`entry ${name} renamed to ${JSON.stringify(to).slice(0, 40)}`, join(h, data)];
      }
      if (op === 2) {
        (h[name] as Json)[r.pick(['extra', 'dtype ', 'offsets', '__proto__'])] = 1;
        return [`entry ${name}: extra key`, join(h, data)];
      }
      if (op === 3) {
        h[name] = r.pick<unknown>([null, [], 'F32', 3, true, {}]);
        return [`entry ${name} = ${JSON.stringify(h[name])}`, join(h, data)];
      }
      if (op === 4) {
        h.__metadata__ = r.pick<unknown>([
          null,
          [],
          'pt',
          1,
          { format: 1 },
          { a: { b: 'c' } },
          { '': '' },
          {},
        ]);
        return [`__metadata__ = ${JSON.stringify(h.__metadata__)}`, join(h, data)];
      }
      if (op === 5) {
        // A duplicate key in the text (JSON.parse keeps the last one).
        const text = JSON.stringify(h);
        const other = JSON.stringify(h[r.pick(names)]);
        const dup = `${text.slice(0, -1)},${JSON.stringify(name)}:${other}}`;
        return [`entry ${name} duplicated in text`, joinRaw(dup, data)];
      }
      if (op === 6) {
        h[`extra.${r.int(100)}`] = { dtype: 'F32', shape: [1], data_offsets: [data.length, data.length + 4] };
        const out = new Uint8Array(data.length + 4);
        out.set(data);
        return ['extra tensor appended', join(h, out)];
      }
      return [
        `${names.length} entries shuffled`,
        join(Object.fromEntries(Object.entries(h).reverse()), data),
      ];
    }),
  ],
  [
    'header-text',
    1,
    structural((r, h, data) => {
      const text = JSON.stringify(h);
      const op = r.int(9);
      const enc = new TextEncoder();
      switch (op) {
        case 0:
          return ['root array', joinRaw(`[${text}]`, data)];
        case 1:
          return ['root scalar', joinRaw(r.pick(['null', '1', '"x"', 'true', '', ' ']), data)];
        case 2:
          return ['BOM', joinRaw(`\uFEFF${text}`, data)];
        case 3:
          return [
            'trailing garbage',
            joinRaw(`${text}${r.pick(['x', '}', ',', '\u0000', '  ', '\n'])}`, data),
          ];
        case 4:
          return ['padding', joinRaw(`${' '.repeat(r.int(20))}${text}${'\t\n\r '.slice(0, r.int(5))}`, data)];
        case 5: {
          // Invalid UTF-8 inside a string: an overlong, a surrogate, a lone continuation byte, a cut sequence.
          const bad = r.pick([
            [0xc0, 0x80],
            [0xed, 0xa0, 0x80],
            [0x80],
            [0xe2, 0x82],
            [0xf8, 0x88, 0x80, 0x80, 0x80],
          ]);
          const t = enc.encode(text);
          const at = t.indexOf(0x22) + 1; // inside the first key
          const out = new Uint8Array(t.length + bad.length);
          out.set(t.subarray(0, at));
          out.set(bad, at);
          out.set(t.subarray(at), at + bad.length);
          return ['invalid UTF-8', joinRaw(out, data)];
        }
        case 6: {
          const depth = r.pick([100, 5000, 100_000]);
          const deep = `${text.slice(0, -1)},"deep":${'['.repeat(depth)}${']'.repeat(depth)}}`;
          return [`nesting ${depth}`, joinRaw(deep, data)];
        }
        case 7:
          return ['lone surrogate escape', joinRaw(text.replace('"', '"\\ud800'), data)];
        default: {
          const numbers = ['1e999', '-0', '1.0', '1e2', '01', 'NaN', 'Infinity', '0x10', '9007199254740993'];
          return ['number text', joinRaw(text.replace(/\d+/, r.pick(numbers)), data)];
        }
      }
    }),
  ],
  [
    'data',
    0.7,
    (r, bytes) => {
      const out = bytes.slice();
      const start = 8 + headerLen(bytes);
      const k = 1 + r.int(32);
      for (let i = 0; i < k && start < out.length; i++) {
        out[start + r.int(out.length - start)] = r.pick([0xff, 0x7f, 0x80, 0x00, 0x7c, 0xfc, r.int(256)]);
      }
      return [`data bytes x${k}`, out];
    },
  ],
  [
    'layout',
    0.6,
    (r, bytes, base) => {
      if (bytes !== base.bytes) return bitflip(r, bytes, base);
      const ts = decodeAll(bytes);
      const op = r.int(3);
      if (op === 0) {
        // Reordered tensors: a valid file.
        for (let i = ts.length - 1; i > 0; i--) {
          const j = r.int(i + 1);
          [ts[i], ts[j]] = [ts[j], ts[i]];
        }
        return ['tensors reordered', writeSafetensors(ts)];
      }
      const s = split(writeSafetensors(ts))!;
      if (op === 1) {
        // Gaps between tensors: refused by both readers (the format packs tensors).
        let shift = 0;
        for (const name of tensorNames(s.header)) {
          const e = s.header[name] as Json;
          const [b, en] = e.data_offsets as number[];
          shift += r.int(5);
          e.data_offsets = [b + shift, en + shift];
        }
        const out = new Uint8Array(s.data.length + shift);
        let p = 0;
        let q = 0;
        for (const name of tensorNames(s.header)) {
          const [b, en] = (s.header[name] as Json).data_offsets as number[];
          const size = en - b;
          out.set(s.data.subarray(p, p + size), b);
          p += size;
          q = en;
        }
        return [`gaps (${shift} bytes)`, join(s.header, out.subarray(0, q))];
      }
      // Trailing bytes after the last tensor: refused by both readers.
      const out = new Uint8Array(bytes.length + 1 + r.int(16));
      out.set(bytes);
      return ['trailing bytes', out];
    },
  ],
];

const TOTAL_WEIGHT = MUTATORS.reduce((a, [, w]) => a + w, 0);

function pickMutator(r: Rng): [string, Mutator] {
  let x = r.float() * TOTAL_WEIGHT;
  for (const [name, w, m] of MUTATORS) {
    x -= w;
    if (x < 0) return [name, m];
  }
  return [MUTATORS[0][0], MUTATORS[0][2]];
}

function mutateSafetensors(seed: number, bases: Base[]): { label: string; base: Base; bytes: Uint8Array } {
  const r = new Rng(seed);
  const base = r.pick(bases);
  let bytes = base.bytes;
  const labels: string[] = [base.name];
  const rounds = r.chance(0.8) ? 1 : 2 + r.int(2);
  for (let i = 0; i < rounds; i++) {
    const [, m] = pickMutator(r);
    const [what, out] = m(r, bytes, base);
    labels.push(what);
    bytes = out;
  }
  return { label: labels.join(' / '), base, bytes };
}

// ---- config mutations --------------------------------------------------------------------------------------

const NUMERIC_TEXT = [
  '0',
  '-0',
  '-1',
  '1',
  '2',
  '3',
  '0.5',
  '1.0000000001',
  '5e-324',
  '1e-320',
  '1e-300',
  '2147483647',
  '2147483648',
  '4294967296',
  '9007199254740991',
  '9007199254740992',
  '9007199254740993',
  '1e21',
  '1e300',
  '1.7976931348623157e308',
  '-1.7976931348623157e308',
  '1e999',
  '-1e999',
  '1e-999',
  'NaN',
  'Infinity',
  '0x10',
  '01',
  '1.',
  '.5',
  '+1',
  '-',
  '1e',
  '99999999999999999999999',
  '"8"',
  'true',
  'null',
  '[]',
  '{}',
  '[8]',
  '"gelu"',
  '""',
];

const UNSUPPORTED: [string, unknown][] = [
  ['rope_scaling', { type: 'linear', factor: 2 }],
  ['rope_scaling', { rope_type: 'default', rope_theta: 10000 }],
  ['rope_scaling', { rope_type: 'default', rope_theta: 5 }],
  ['rope_parameters', { rope_type: 'dynamic' }],
  ['rope_parameters', { rope_type: 'default', rope_theta: -1, partial_rotary_factor: 0.25 }],
  ['rope_parameters', { rope_type: 'default', partial_rotary_factor: 2 }],
  ['rope_parameters', { rope_type: 'default', rope_theta: 10000, partial_rotary_factor: 0.5, x: 1 }],
  ['rope_parameters', null],
  ['rope_parameters', 'default'],
  ['rope_theta', 500],
  ['partial_rotary_factor', 0.3],
  ['sliding_window', 4],
  ['sliding_window', null],
  ['use_sliding_window', true],
  ['layer_types', ['full_attention', 'sliding_attention']],
  ['layer_types', 'full_attention'],
  ['hidden_act', 'gelu_new'],
  ['hidden_act', 7],
  ['num_key_value_heads', 1],
  ['num_key_value_heads', 2],
  ['head_dim', 7],
  ['head_dim', 4],
  ['quantization_config', {}],
  ['model_type', 'llama'],
  ['model_type', 3],
  ['add_cross_attention', true],
  ['is_encoder_decoder', true],
  ['tie_word_embeddings', 'yes'],
  ['tie_word_embeddings', true],
  ['attention_bias', false],
  ['use_parallel_residual', 0],
  ['use_parallel_residual', false],
  ['bos_token_id', 0],
  ['__proto__', { vocab_size: 1 }],
  ['constructor', 1],
];

function mutateConfig(seed: number, bases: Base[]): { label: string; base: Base; config: string } {
  const r = new Rng(seed);
  const base = r.pick(bases);
  const obj = JSON.parse(base.config) as Json;
  const keys = Object.keys(obj);
  const key = r.pick(keys);
  const op = r.int(8);
  const PLACEHOLDER = '"__FUZZ_VALUE__"';
  const withValue = (path: string[], text: string) => {
    let o: Json = obj;
    for (const k of path.slice(0, -1)) {
      if (typeof o[k] !== 'object' || o[k] === null) o[k] = {};
      o = o[k] as Json;
    }
    o[path[path.length - 1]] = '__FUZZ_VALUE__';
    return JSON.stringify(obj, null, 2).replace(PLACEHOLDER, text);
  };
  const label = (s: string) => `${base.name} / ${s}`;
  switch (op) {
    case 0:
    case 1: {
      const numericKeys = [
        'vocab_size',
        'hidden_size',
        'num_hidden_layers',
        'num_attention_heads',
        'intermediate_size',
        'max_position_embeddings',
        'layer_norm_eps',
        'rotary_pct',
        'rotary_emb_base',
        key,
      ];
      const path = r.chance(0.15)
        ? ['rope_parameters', r.pick(['rope_theta', 'partial_rotary_factor', 'rope_type'])]
        : [r.pick(numericKeys)];
      const v = r.pick(NUMERIC_TEXT);
      return { label: label(`${path.join('.')} = ${v}`), base, config: withValue(path, v) };
    }
    case 2:
      delete obj[key];
      return { label: label(`${key} deleted`), base, config: JSON.stringify(obj) };
    case 3: {
      const [k, v] = r.pick(UNSUPPORTED);
      const text = JSON.stringify(obj, null, 2);
      // Textual insert so that '__proto__' stays an own key as JSON.parse makes it.
      return {
        label: label(`${k} = ${JSON.stringify(v)}`),
        base,
        config: `{${JSON.stringify(k)}: ${JSON.stringify(v)},${text.slice(1)}`,
      };
    }
    case 4: {
      const text = JSON.stringify(obj);
      const p = r.int(text.length + 1);
      const t = r.int(4);
      if (t === 0) return { label: label(`truncated at ${p}`), base, config: text.slice(0, p) };
      if (t === 1)
        return { label: label(`char ${p} deleted`), base, config: text.slice(0, p) + text.slice(p + 1) };
      const c = r.pick([
        '{',
        '}',
        '[',
        ']',
        ',',
        ':',
        '"',
        '\\',
        ' ',
        '0',
        'a',
        'é',
        '\u0000',
        '\uFEFF',
        '\ud800',
      ]);
      if (t === 2)
        return {
          label: label(`${JSON.stringify(c)} inserted at ${p}`),
          base,
          config: text.slice(0, p) + c + text.slice(p),
        };
      return {
        label: label(`char ${p} = ${JSON.stringify(c)}`),
        base,
        config: text.slice(0, p) + c + text.slice(p + 1),
      };
    }
    case 5: {
      const text = JSON.stringify(obj);
      const v = r.pick(NUMERIC_TEXT);
      return {
        label: label(`duplicate ${key} = ${v}`),
        base,
        config: `${text.slice(0, -1)},${JSON.stringify(key)}:${v}}`,
      };
    }
    case 6: {
      const text = JSON.stringify(obj);
      const forms: [string, string][] = [
        ['array', `[${text}]`],
        ['null', 'null'],
        ['empty', ''],
        ['BOM', `\uFEFF${text}`],
        ['string', JSON.stringify(text)],
        ['deep', `${'['.repeat(50_000)}${']'.repeat(50_000)}`],
        ['deep value', `${text.slice(0, -1)},"x":${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}}`],
        ['huge key', `{${JSON.stringify('k'.repeat(100_000))}:1,${text.slice(1)}`],
        ['lone surrogate', text.replace('"gelu"', '"\\udfff"')],
      ];
      const [what, config] = r.pick(forms);
      return { label: label(what), base, config };
    }
    default: {
      // Several numeric extremes at once.
      let config = base.config;
      const n = 2 + r.int(3);
      const parts: string[] = [];
      for (let i = 0; i < n; i++) {
        const k = r.pick(keys);
        const v = r.pick(NUMERIC_TEXT);
        const o = JSON.parse(config) as Json;
        o[k] = '__FUZZ_VALUE__';
        const next = JSON.stringify(o).replace(PLACEHOLDER, v);
        parts.push(`${k}=${v}`);
        try {
          JSON.parse(next);
          config = next;
        } catch {
          return { label: label(parts.join(', ')), base, config: next };
        }
      }
      return { label: label(parts.join(', ')), base, config };
    }
  }
}

// ---- oracles -----------------------------------------------------------------------------------------------

/** 'ok', or the message of the one ModelLoadError; anything else throws. */
function loadOutcome(config: string, bytes: Uint8Array): string {
  try {
    const cfg = parseConfigText(config);
    const w = loadWeights(cfg, bytes);
    if (w.layers.length !== cfg.numLayers || w.embedIn.data.length !== cfg.vocabSize * cfg.hiddenSize) {
      throw new Error('loadWeights returned weights that do not match the config');
    }
    return 'ok';
  } catch (e) {
    return refusalMessage(e);
  }
}

function refusalMessage(e: unknown): string {
  if (!(e instanceof ModelLoadError)) {
    throw new Error(`not a ModelLoadError: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
  }
  // Every message is one line (ModelLoadError folds the whitespace of parser messages).
  if (!/^(config\.json|model\.safetensors): ./.test(e.message) || e.message.includes('\n')) {
    throw new Error(`malformed message: ${JSON.stringify(e.message.slice(0, 300))}`);
  }
  if (e.message.length > 1000) throw new Error(`message of ${e.message.length} characters`);
  return e.message;
}

interface Tally {
  ok: number;
  refused: number;
  messages: Set<string>;
}

function runSync(
  group: number,
  count: number,
  make: (seed: number) => { label: string; run: () => string },
): Tally {
  const tally: Tally = { ok: 0, refused: 0, messages: new Set() };
  for (const seed of seeds(group, count)) {
    let label = '(generating)';
    const t0 = performance.now();
    try {
      const c = make(seed);
      label = c.label;
      const out = c.run();
      if (out === 'ok') tally.ok++;
      else {
        tally.refused++;
        tally.messages.add(out.replace(/\d+/g, 'N'));
      }
    } catch (e) {
      throw new Error(
        `fuzz case failed, seed ${seed} (replay: FUZZ_SEED=${seed} npx vitest run src/model/fuzz.test.ts)\n` +
          `  mutation: ${label.slice(0, 300)}\n  ${e instanceof Error ? e.message : String(e)}`,
      );
    }
    const ms = performance.now() - t0;
    if (ms > CASE_MS) {
      throw new Error(
        `fuzz case took ${ms.toFixed(0)} ms, seed ${seed} (FUZZ_SEED=${seed}): ${label.slice(0, 300)}`,
      );
    }
  }
  return tally;
}

// ---- tests -------------------------------------------------------------------------------------------------

describe('reader fuzzing', () => {
  const bases = makeBases();

  it('the base models load', () => {
    for (const b of bases) expect(loadOutcome(b.config, b.bytes), b.name).toBe('ok');
  });

  it(`mutated model.safetensors files: a valid load or one ModelLoadError (${SAFETENSORS_CASES} cases)`, () => {
    const t = runSync(1, SAFETENSORS_CASES, (seed) => {
      const m = mutateSafetensors(seed, bases);
      return { label: m.label, run: () => loadOutcome(m.base.config, m.bytes) };
    });
    if (REPLAY === null) {
      expect(t.ok + t.refused).toBe(SAFETENSORS_CASES);
      expect(t.ok).toBeGreaterThan(SAFETENSORS_CASES * 0.05); // the consistent rewrites and data edits load
      expect(t.messages.size).toBeGreaterThan(40); // and the refusals are of many kinds
    }
  });

  it(`mutated config.json texts: a valid load or one ModelLoadError (${CONFIG_CASES} cases)`, () => {
    const t = runSync(2, CONFIG_CASES, (seed) => {
      const m = mutateConfig(seed, bases);
      return { label: m.label, run: () => loadOutcome(m.config, m.base.bytes) };
    });
    if (REPLAY === null) {
      expect(t.ok + t.refused).toBe(CONFIG_CASES);
      expect(t.ok).toBeGreaterThan(CONFIG_CASES * 0.05);
      expect(t.messages.size).toBeGreaterThan(40);
    }
  });

  it(`mutated files streamed in random chunks agree with the whole-file reader (${STREAM_CASES} cases)`, async () => {
    let ok = 0;
    for (const seed of seeds(3, STREAM_CASES)) {
      const m = mutateSafetensors(seed, bases);
      const r = new Rng(seed ^ 0x5a5a5a5a);
      const maxChunk = r.pick([1, 3, 64, 4096]);
      const total = r.chance(0.5) ? m.bytes.length : null;
      const where = `seed ${seed} (replay: FUZZ_SEED=${seed} npx vitest run src/model/fuzz.test.ts), chunks <= ${maxChunk}, total ${total}\n  mutation: ${m.label.slice(0, 300)}`;
      const got = new Map<string, Float32Array>();
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), CASE_MS);
      let outcome: string;
      try {
        async function* source(): AsyncGenerator<Uint8Array> {
          for (let p = 0; p < m.bytes.length; ) {
            const n = 1 + r.int(maxChunk);
            yield m.bytes.subarray(p, p + n);
            p += n;
          }
        }
        await streamSafetensors(source(), total, {
          ignore,
          signal: ac.signal,
          onTensor: (name, _e, data) => {
            got.set(name, data);
          },
        });
        outcome = 'ok';
      } catch (e) {
        if (e instanceof Error && e.name === 'AbortError') throw new Error(`stream case timed out, ${where}`);
        try {
          outcome = refusalMessage(e);
        } catch (err) {
          throw new Error(`stream case failed, ${where}\n  ${(err as Error).message}`);
        }
      } finally {
        clearTimeout(timer);
      }
      // The whole-file reader on the same bytes: the stream accepts exactly what it accepts, less trailing bytes.
      let whole: ReturnType<typeof parseSafetensorsHeader> | null = null;
      let trailing = false;
      try {
        whole = parseSafetensorsHeader(m.bytes, 'model.safetensors', { ignore });
        const n = whole.dataOffset - 8;
        const section = parseHeaderSection(m.bytes.subarray(8, 8 + n), m.bytes.length - 8 - n, 'x', {
          ignore,
        });
        trailing = section.dataEnd !== m.bytes.length - whole.dataOffset;
      } catch {
        whole = null;
      }
      if (outcome === 'ok') {
        ok++;
        if (whole === null)
          throw new Error(`the stream accepted what the whole-file reader refuses, ${where}`);
        for (const e of whole.entries.values()) {
          const ref = readTensorF32(m.bytes, whole.dataOffset, e);
          const data = got.get(e.name);
          const same =
            data !== undefined &&
            data.length === ref.length &&
            new Uint32Array(data.buffer).every((x, i) => x === new Uint32Array(ref.buffer)[i]);
          if (!same) throw new Error(`tensor ${e.name} differs from readTensorF32, ${where}`);
        }
        if (got.size !== whole.entries.size) throw new Error(`the stream gave ${got.size} tensors, ${where}`);
      } else if (whole !== null && !trailing) {
        throw new Error(`the stream refused what the whole-file reader accepts (${outcome}), ${where}`);
      }
    }
    if (REPLAY === null) expect(ok).toBeGreaterThan(STREAM_CASES * 0.05);
  });
});
