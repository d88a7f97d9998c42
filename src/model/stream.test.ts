import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../numeric/random';
import type { DType } from '../numeric/types';
import { parseConfigText } from './config';
import { ModelLoadError } from './errors';
import { type RandomModelSpec, randomModelFiles } from './random-model';
import { parseSafetensorsHeader, type SafetensorsEntry, type SafetensorsHeader } from './safetensors';
import { readTensorF32 } from './safetensors-read';
import { type StreamSafetensorsOptions, streamSafetensors } from './stream';
import { nodeFileStream } from './stream-node';
import { loadWeights } from './weights';

type Chunker = () => number;
const fixed =
  (n: number): Chunker =>
  () =>
    n;
const randomSizes = (seed: number, max: number): Chunker => {
  const r = mulberry32(seed);
  return () => 1 + Math.floor(r() * max);
};

/** `bytes` as an async iterable of copies cut by `sizes`. */
async function* chunks(bytes: Uint8Array, sizes: Chunker): AsyncGenerator<Uint8Array> {
  for (let p = 0; p < bytes.length; ) {
    const n = Math.min(sizes(), bytes.length - p);
    yield bytes.slice(p, p + n);
    p += n;
  }
}

/** `bytes` as a ReadableStream of copies cut by `sizes`; `cancelled` records a cancel. */
function readable(
  bytes: Uint8Array,
  sizes: Chunker,
): { stream: ReadableStream<Uint8Array>; cancelled: () => boolean } {
  let p = 0;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (p >= bytes.length) {
        c.close();
        return;
      }
      const n = Math.min(sizes(), bytes.length - p);
      c.enqueue(bytes.slice(p, p + n));
      p += n;
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, cancelled: () => cancelled };
}

interface Collected {
  header: SafetensorsHeader | null;
  order: string[];
  tensors: Map<string, Float32Array>;
  progress: [number, number | null][];
  maxHeld: number;
  bytes: number;
}

async function collect(
  source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  total: number | null,
  extra: Partial<StreamSafetensorsOptions> = {},
): Promise<Collected> {
  const got: Collected = { header: null, order: [], tensors: new Map(), progress: [], maxHeld: 0, bytes: 0 };
  const r = await streamSafetensors(source, total, {
    onHeader: (h) => {
      got.header = h;
    },
    onTensor: (name, _e, data) => {
      got.order.push(name);
      got.tensors.set(name, data);
    },
    onProgress: (loaded, t) => {
      got.progress.push([loaded, t]);
    },
    onBuffered: (n) => {
      got.maxHeld = Math.max(got.maxHeld, n);
    },
    ...extra,
  });
  expect(r.header).toBe(got.header);
  got.bytes = r.bytes;
  return got;
}

/** The whole-file reader's tensors in offset order. */
function reference(bytes: Uint8Array, ignore?: (n: string) => boolean): [string, Float32Array][] {
  const h = parseSafetensorsHeader(bytes, 'model.safetensors', { ignore });
  return [...h.entries.values()]
    .sort((a, b) => a.begin - b.begin || a.end - b.end)
    .map((e) => [e.name, readTensorF32(bytes, h.dataOffset, e)]);
}

/** Bitwise equality (NaN payloads and -0 included). */
function sameBits(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return ua.every((x, i) => x === ub[i]);
}

function expectSameTensors(got: Collected, bytes: Uint8Array, ignore?: (n: string) => boolean): void {
  const ref = reference(bytes, ignore);
  expect(got.order).toEqual(ref.map(([n]) => n));
  for (const [name, data] of ref) expect(sameBits(got.tensors.get(name)!, data), name).toBe(true);
}

/** A safetensors file from a raw header object and a data section. */
function rawFile(header: unknown, data: Uint8Array): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

async function streamError(
  bytes: Uint8Array,
  total: number | null,
  sizes: Chunker = fixed(5),
): Promise<ModelLoadError> {
  try {
    await streamSafetensors(chunks(bytes, sizes), total, { onTensor: () => {} });
  } catch (e) {
    if (e instanceof ModelLoadError) return e;
    throw new Error(`expected a ModelLoadError, got ${String(e)}`);
  }
  throw new Error('expected a ModelLoadError, the stream was accepted');
}

function wholeFileError(bytes: Uint8Array): string {
  try {
    parseSafetensorsHeader(bytes);
  } catch (e) {
    return (e as Error).message;
  }
  return 'accepted';
}

const SPEC: RandomModelSpec = {
  vocab: 16,
  d: 8,
  layers: 2,
  heads: 2,
  ff: 16,
  rotaryPct: 0.5,
  parallel: true,
};

describe('streamSafetensors', () => {
  for (const dtype of ['F32', 'F16', 'BF16'] as DType[]) {
    it(`gives the same ${dtype} tensors as readTensorF32 / loadWeights for any chunking`, async () => {
      const { config, weights } = randomModelFiles({ ...SPEC, dtype }, 11);
      const chunkers: [string, Chunker][] = [
        ['1 byte', fixed(1)],
        ['7 bytes', fixed(7)],
        ['13 bytes', fixed(13)],
        ['4 KiB', fixed(4096)],
        ['whole file', fixed(weights.length)],
        ['random 1..97', randomSizes(5, 97)],
        ['random 1..5000', randomSizes(6, 5000)],
      ];
      for (const [what, sizes] of chunkers) {
        for (const total of [weights.length, null]) {
          const got = await collect(chunks(weights, sizes), total);
          expectSameTensors(got, weights);
          expect(got.bytes, what).toBe(weights.length);
        }
        const { stream } = readable(weights, sizes);
        expectSameTensors(await collect(stream, weights.length), weights);
      }
      // And the same values loadWeights puts into the model.
      const w = loadWeights(parseConfigText(config), weights);
      const got = await collect(chunks(weights, randomSizes(9, 31)), weights.length);
      expect(sameBits(got.tensors.get('gpt_neox.embed_in.weight')!, w.embedIn.data)).toBe(true);
      expect(
        sameBits(
          got.tensors.get('gpt_neox.layers.1.attention.query_key_value.weight')!,
          w.layers[1].qkv.weight.data,
        ),
      ).toBe(true);
      expect(sameBits(got.tensors.get('embed_out.weight')!, w.lmHead.data)).toBe(true);
    });
  }

  it('handles unaligned offsets, empty tensors (also at the very end), metadata and ignored tensors', async () => {
    const data = new Uint8Array(34).map((_, i) => (i * 37 + 11) & 0xff);
    const header = {
      __metadata__: { format: 'pt' },
      b: { dtype: 'F16', shape: [3], data_offsets: [0, 6] },
      empty0: { dtype: 'F32', shape: [0], data_offsets: [0, 0] },
      a: { dtype: 'F32', shape: [2], data_offsets: [6, 14] }, // unaligned for F32
      mask: { dtype: 'BOOL', shape: [4], data_offsets: [14, 18] }, // ignored
      c: { dtype: 'BF16', shape: [2, 2], data_offsets: [18, 26] },
      mid: { dtype: 'BF16', shape: [2, 0], data_offsets: [26, 26] },
      d: { dtype: 'F32', shape: [1, 2, 1], data_offsets: [26, 34] },
      tail: { dtype: 'F16', shape: [0, 5], data_offsets: [34, 34] },
    };
    const bytes = rawFile(header, data);
    const ignore = (n: string) => n === 'mask';
    for (const sizes of [fixed(1), fixed(3), fixed(bytes.length)]) {
      for (const total of [bytes.length, null]) {
        const got = await collect(chunks(bytes, sizes), total, { ignore });
        expectSameTensors(got, bytes, ignore);
        expect(got.order).toEqual(['empty0', 'b', 'a', 'c', 'mid', 'd', 'tail']);
        expect(got.header!.metadata).toEqual({ format: 'pt' });
        expect(got.header!.ignored).toEqual(['mask']);
      }
    }
    // Without `ignore` the BOOL tensor is refused like the whole-file reader refuses it.
    const err = await streamError(bytes, bytes.length);
    expect(err.message).toBe(wholeFileError(bytes));
    expect(err.message).toContain("tensor 'mask' has dtype BOOL");
  });

  it('refuses gaps and duplicate names like the whole-file reader, known length or not', async () => {
    const gap = rawFile(
      {
        a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] },
        b: { dtype: 'F32', shape: [1], data_offsets: [6, 10] },
      },
      new Uint8Array(10),
    );
    for (const total of [gap.length, null]) {
      const err = await streamError(gap, total, fixed(3));
      expect(err.message).toBe(wholeFileError(gap));
      expect(err.message).toContain("2 unlisted bytes (4..6) between tensor 'a' and tensor 'b'");
    }
    const text = new TextEncoder().encode(
      '{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}}',
    );
    const dup = new Uint8Array(8 + text.length + 4);
    new DataView(dup.buffer).setUint32(0, text.length, true);
    dup.set(text, 8);
    for (const total of [dup.length, null]) {
      const err = await streamError(dup, total, fixed(5));
      expect(err.message).toBe(wholeFileError(dup));
      expect(err.message).toContain("header entry 'w' appears twice");
    }
  });

  it('accepts a header with no tensors and an empty data section', async () => {
    const bytes = rawFile({ __metadata__: {} }, new Uint8Array(0));
    const got = await collect(chunks(bytes, fixed(1)), null);
    expect(got.order).toEqual([]);
    expect(got.bytes).toBe(bytes.length);
  });

  it('reports progress after each chunk: increasing, ending at the total', async () => {
    const { weights } = randomModelFiles(SPEC, 3);
    for (const total of [weights.length, null]) {
      const got = await collect(chunks(weights, randomSizes(2, 300)), total);
      const loaded = got.progress.map(([l]) => l);
      for (let i = 1; i < loaded.length; i++) expect(loaded[i]).toBeGreaterThan(loaded[i - 1]);
      expect(loaded.at(-1)).toBe(weights.length);
      expect(got.progress.every(([, t]) => t === total)).toBe(true);
    }
  });

  it('refuses a truncated stream at every cut point with a ModelLoadError', async () => {
    const { weights } = randomModelFiles({ ...SPEC, vocab: 4, d: 4, layers: 1, ff: 4, heads: 1 }, 4);
    const h = parseSafetensorsHeader(weights);
    for (let cut = 0; cut < weights.length; cut++) {
      const part = weights.subarray(0, cut);
      const err = await streamError(part, null, fixed(7));
      if (cut < h.dataOffset) {
        // Cut in the length prefix or the header: the whole-file reader's own message.
        expect(err.message).toBe(wholeFileError(part));
      } else {
        expect(err.message).toMatch(
          /^model\.safetensors: file is truncated: it ended at byte \d+ but the header's/,
        );
      }
      // Told the real size up front, the stream is refused as soon as the header shows the cut.
      expect(await streamError(part, cut, fixed(7))).toBeInstanceOf(ModelLoadError);
    }
  });

  it('refuses bytes past the end of the data section, and a total that disagrees with the stream', async () => {
    const { weights } = randomModelFiles(SPEC, 5);
    for (const extra of [1, 3, 1000]) {
      const longer = new Uint8Array(weights.length + extra);
      longer.set(weights);
      expect((await streamError(longer, null, fixed(64))).message).toMatch(
        /file continues past the end of the data section: the header's tensors end at byte \d+ \(trailing bytes\)/,
      );
      expect((await streamError(longer, longer.length, fixed(64))).message).toBe(
        `model.safetensors: file is ${longer.length} bytes but the header's tensors end at byte ${weights.length} ` +
          `(${extra} trailing bytes)`,
      );
    }
    // The caller's total is smaller / larger than what the stream delivers.
    expect((await streamError(weights, weights.length - 1)).message).toMatch(
      /past the end of the data section/,
    );
    expect((await streamError(weights, weights.length + 5)).message).toMatch(/\(5 trailing bytes\)/);
    expect((await streamError(weights, 3)).message).toBe(
      'model.safetensors: file is 3 bytes, too short for a safetensors header (truncated?)',
    );
  });

  it('refuses corrupt headers with exactly the whole-file reader’s messages (shared validation)', async () => {
    const { weights } = randomModelFiles(SPEC, 6);
    const n = new DataView(weights.buffer).getUint32(0, true);
    const headerText = new TextDecoder().decode(weights.subarray(8, 8 + n));
    const withHeader = (text: string) => {
      const json = new TextEncoder().encode(text);
      const out = new Uint8Array(8 + json.length + weights.length - 8 - n);
      new DataView(out.buffer).setUint32(0, json.length, true);
      out.set(json, 8);
      out.set(weights.subarray(8 + n), 8 + json.length);
      return out;
    };
    const setLength = (lo: number, hi = 0) => {
      const out = weights.slice();
      new DataView(out.buffer).setUint32(0, lo, true);
      new DataView(out.buffer).setUint32(4, hi, true);
      return out;
    };
    const corrupt: [string, Uint8Array][] = [
      ['not JSON', withHeader(headerText.replace('{', '['))],
      ['bad UTF-8', withHeader(headerText).map((b, i) => (i === 9 ? 0xff : b))],
      ['root array', withHeader('[1,2]')],
      ['unknown dtype', withHeader(headerText.replace('"F32"', '"F33"'))],
      ['I64 dtype', withHeader(headerText.replace('"F32"', '"I64"'))],
      ['shape mismatch', withHeader(headerText.replace('"shape":[16,8]', '"shape":[16,9]'))],
      ['negative offset', withHeader(headerText.replace('"data_offsets":[0,', '"data_offsets":[-1,'))],
      [
        'offsets past the end',
        withHeader(
          headerText.replace(/"data_offsets":\[(\d+),(\d+)\]\}\}/, '"data_offsets":[$1,99999999]}}'),
        ),
      ],
      ['metadata not strings', withHeader(headerText.replace('"format":"pt"', '"format":1'))],
      ['empty header', setLength(0)],
      ['header length past the file', setLength(weights.length)],
      ['huge header length', setLength(0xffffffff, 0xffffffff)],
      ['header length at the limit', setLength(100_000_000)],
    ];
    for (const [what, bytes] of corrupt) {
      const expected = wholeFileError(bytes);
      expect(expected, what).not.toBe('accepted');
      const err = await streamError(bytes, bytes.length, fixed(33));
      expect(err.message, what).toBe(expected);
    }
  });

  it('rejects with AbortError when aborted between tensors, and cancels the source', async () => {
    const { weights } = randomModelFiles(SPEC, 7);
    const ac = new AbortController();
    const seen: string[] = [];
    const { stream, cancelled } = readable(weights, fixed(64));
    const p = streamSafetensors(stream, weights.length, {
      signal: ac.signal,
      onTensor: (name) => {
        seen.push(name);
        if (seen.length === 3) ac.abort();
      },
    });
    await expect(p).rejects.toMatchObject({ name: 'AbortError' });
    expect(seen.length).toBe(3);
    await new Promise((r) => setTimeout(r, 0));
    expect(cancelled()).toBe(true);
  });

  it('rejects promptly when aborted while the source is stalled', async () => {
    const { weights } = randomModelFiles(SPEC, 8);
    async function* stalled(): AsyncGenerator<Uint8Array> {
      yield weights.slice(0, 200);
      await new Promise(() => {}); // never delivers the rest
    }
    const ac = new AbortController();
    const t0 = performance.now();
    setTimeout(() => ac.abort(), 20);
    await expect(
      streamSafetensors(stalled(), null, { signal: ac.signal, onTensor: () => {} }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    expect(performance.now() - t0).toBeLessThan(1000);

    // A stalled ReadableStream is cancelled at once.
    let cancelled = false;
    const ac2 = new AbortController();
    const rs = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(weights.slice(0, 100));
      },
      cancel() {
        cancelled = true;
      },
    });
    setTimeout(() => ac2.abort(), 10);
    const err = await streamSafetensors(rs, weights.length, { signal: ac2.signal, onTensor: () => {} }).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(DOMException);
    expect((err as DOMException).name).toBe('AbortError');
    await new Promise((r) => setTimeout(r, 0));
    expect(cancelled).toBe(true);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const { weights } = randomModelFiles(SPEC, 9);
    const ac = new AbortController();
    ac.abort();
    let pulled = false;
    async function* src(): AsyncGenerator<Uint8Array> {
      pulled = true;
      yield weights;
    }
    await expect(
      streamSafetensors(src(), null, { signal: ac.signal, onTensor: () => {} }),
    ).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(pulled).toBe(false);
  });

  it('awaits onTensor before reading on, and passes its errors through', async () => {
    const { weights } = randomModelFiles(SPEC, 10);
    let inside = false;
    let pullsInside = 0;
    async function* src(): AsyncGenerator<Uint8Array> {
      for (let p = 0; p < weights.length; p += 50) {
        if (inside) pullsInside++;
        yield weights.slice(p, p + 50);
      }
    }
    await streamSafetensors(src(), weights.length, {
      onTensor: async () => {
        inside = true;
        await new Promise((r) => setTimeout(r, 1));
        inside = false;
      },
    });
    expect(pullsInside).toBe(0);

    let finished = false;
    async function* src2(): AsyncGenerator<Uint8Array> {
      try {
        for (let p = 0; p < weights.length; p += 50) yield weights.slice(p, p + 50);
      } finally {
        finished = true;
      }
    }
    const boom = new Error('boom');
    await expect(
      streamSafetensors(src2(), null, {
        onTensor: () => {
          throw boom;
        },
      }),
    ).rejects.toBe(boom);
    await new Promise((r) => setTimeout(r, 0));
    expect(finished).toBe(true); // the source was stopped
  });

  it('holds at most the largest tensor + one chunk + the header, never the whole file', async () => {
    const spec: RandomModelSpec = {
      vocab: 256,
      d: 32,
      layers: 4,
      heads: 4,
      ff: 128,
      rotaryPct: 0.5,
      parallel: true,
    };
    for (const dtype of ['F32', 'F16'] as DType[]) {
      const { weights } = randomModelFiles({ ...spec, dtype }, 12);
      const h = parseSafetensorsHeader(weights);
      const largest = Math.max(...[...h.entries.values()].map((e: SafetensorsEntry) => e.end - e.begin));
      const headerBytes = h.dataOffset - 8;
      for (const chunk of [1, 7, 4096, 50_000]) {
        const got = await collect(chunks(weights, fixed(chunk)), weights.length);
        expect(got.maxHeld, `${dtype} chunk ${chunk}`).toBeLessThanOrEqual(largest + chunk + headerBytes);
        expect(got.maxHeld).toBeGreaterThan(0);
      }
      expect(largest * 4).toBeLessThan(weights.length); // so the bound above is well below a full copy
    }
  });

  it('refuses a bad totalBytes and non-Uint8Array chunks as programming errors', async () => {
    await expect(
      streamSafetensors(chunks(new Uint8Array(8), fixed(8)), -1, { onTensor: () => {} }),
    ).rejects.toThrow(TypeError);
    async function* strings(): AsyncGenerator<Uint8Array> {
      yield 'abc' as unknown as Uint8Array;
    }
    await expect(streamSafetensors(strings(), null, { onTensor: () => {} })).rejects.toThrow(TypeError);
  });
});

describe('nodeFileStream', () => {
  it('streams a file from disk in chunks of the given size', async () => {
    const { weights } = randomModelFiles({ ...SPEC, dtype: 'BF16' }, 13);
    const dir = mkdtempSync(join(tmpdir(), 'st-'));
    try {
      const path = join(dir, 'model.safetensors');
      writeFileSync(path, weights);
      const sizes: number[] = [];
      for await (const c of nodeFileStream(path, 1000)) sizes.push(c.length);
      expect(sizes.slice(0, -1).every((s) => s === 1000)).toBe(true);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(weights.length);
      expectSameTensors(await collect(nodeFileStream(path, 777), weights.length), weights);
      expectSameTensors(await collect(nodeFileStream(path), null), weights);
      await expect(async () => {
        for await (const _ of nodeFileStream(path, 0)) break;
      }).rejects.toThrow(RangeError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
