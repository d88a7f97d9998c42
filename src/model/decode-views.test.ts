// Decoding without per-element work where it can: F32 tensors viewed in place on the bytes they arrived in (4-byte
// aligned) and copied once where not, F16 / BF16 read through a Uint16Array where 2-byte aligned, and aliases of a
// run's slot compared as pairs of elements. Each against the element-by-element decoding it replaced, bit for bit,
// on random bytes (NaN payloads, ±0, subnormals), at every alignment, for odd lengths.
import { describe, expect, it } from 'vitest';
import { f16BitsToF32Bits } from '../numeric/bits';
import { mulberry32 } from '../numeric/random';
import type { DType } from '../numeric/types';
import { parseConfigText } from './config';
import { randomConfigJson } from './random-model';
import { bitDiff, readRunFile } from './run-file';
import { decodeTensorF32, viewTensorF32 } from './safetensors-read';
import { type TensorToWrite, writeSafetensors } from './safetensors-write';
import { streamSafetensors } from './stream';

/** The decoding before views: one element at a time through a DataView. */
function oldDecode(src: Uint8Array, dtype: DType, n: number): Uint32Array {
  const dv = new DataView(src.buffer, src.byteOffset, src.byteLength);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    if (dtype === 'F32') out[i] = dv.getUint32(4 * i, true);
    else if (dtype === 'F16') out[i] = f16BitsToF32Bits(dv.getUint16(2 * i, true));
    else out[i] = (dv.getUint16(2 * i, true) << 16) >>> 0;
  }
  return out;
}

const bitsOf = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

/** Random bytes where a quarter of the 16/32-bit words are NaN payloads, ±0, ±inf or subnormals. */
function randomBytes(len: number, rand: () => number): Uint8Array {
  const b = new Uint8Array(len);
  for (let i = 0; i < len; i++) b[i] = Math.floor(rand() * 256);
  const specials = [0x00, 0x80, 0x7f, 0xff, 0x01];
  for (let i = 0; i + 1 < len; i += 2)
    if (rand() < 0.25) b[i + 1] = specials[Math.floor(rand() * specials.length)];
  return b;
}

describe('decoding a tensor', () => {
  const rand = mulberry32(2911);
  for (const dtype of ['F32', 'F16', 'BF16'] as const) {
    it(`${dtype}: equals the element-by-element decoding at every offset mod 8, odd lengths`, () => {
      const bpe = dtype === 'F32' ? 4 : 2;
      for (const n of [0, 1, 3, 7, 33, 257, 1001]) {
        for (let off = 0; off < 8; off++) {
          const buf = randomBytes(off + n * bpe + 3, rand);
          const src = buf.subarray(off, off + n * bpe);
          const want = oldDecode(src, dtype, n);
          expect(bitsOf(decodeTensorF32(src, dtype, n))).toEqual(want);
          const view = viewTensorF32(src, dtype, n);
          if (dtype !== 'F32' || off % 4 !== 0) expect(view).toBeNull();
          else {
            expect(view!.buffer).toBe(buf.buffer); // in place: no copy
            expect(bitsOf(view!)).toEqual(want);
          }
        }
      }
    });
  }
});

describe('bitDiff', () => {
  it('counts differing bit patterns like the element loop, at every relative alignment', () => {
    const rand = mulberry32(77);
    for (let trial = 0; trial < 200; trial++) {
      const n = Math.floor(rand() * 70);
      const offA = Math.floor(rand() * 4);
      const offB = Math.floor(rand() * 4);
      const a = new Float32Array(new ArrayBuffer(4 * (n + 4)), 4 * offA, n);
      const b = new Float32Array(new ArrayBuffer(4 * (n + 4)), 4 * offB, n);
      const x = bitsOf(a);
      const y = bitsOf(b);
      const pool = [0, 0x80000000, 0x7fc00000, 0x7fc00001, 0xffc00000, 0x7f800000, 1, 0x3f800000];
      for (let i = 0; i < n; i++) {
        x[i] = rand() < 0.5 ? pool[Math.floor(rand() * pool.length)] : Math.floor(rand() * 2 ** 32);
        y[i] = rand() < 0.7 ? x[i] : rand() < 0.5 ? pool[Math.floor(rand() * pool.length)] : x[i] ^ 1;
      }
      let want = 0;
      for (let i = 0; i < n; i++) if (x[i] !== y[i]) want++;
      expect(bitDiff(a, b)).toBe(want);
    }
  });
});

describe('views on the stream', () => {
  const rand = mulberry32(4242);
  // F32 tensors after BF16 ones of odd length: some start 4-byte aligned in the file, some 2 bytes off.
  const tensors: TensorToWrite[] = [
    { name: 'a', dtype: 'F32', shape: [5, 3] },
    { name: 'b', dtype: 'BF16', shape: [3] },
    { name: 'c', dtype: 'F32', shape: [7] },
    { name: 'd', dtype: 'F16', shape: [1] },
    { name: 'e', dtype: 'F32', shape: [2, 9] },
    { name: 'f', dtype: 'F32', shape: [0] },
    { name: 'g', dtype: 'BF16', shape: [4, 5] },
  ].map((t) => {
    const n = t.shape.reduce((p, q) => p * q, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = (rand() - 0.5) * 1e3;
    return { ...t, dtype: t.dtype as DType, data };
  });
  const file = writeSafetensors(tensors);

  it('hands out in-chunk aligned F32 tensors as views, every tensor equal to the whole-file decoding', async () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const cut = mulberry32(seed);
      async function* chunks() {
        for (let p = 0; p < file.length; ) {
          // Seeds 4–6 cut at multiples of 4 bytes, so tensors 4-byte aligned in the file are in their chunk too.
          const size = seed < 4 ? 1 + Math.floor(cut() * 40) : 4 * (1 + Math.floor(cut() * 100));
          const n = Math.min(size, file.length - p);
          yield file.slice(p, p + n);
          p += n;
        }
      }
      const plain = new Map<string, Uint32Array>();
      await streamSafetensors(chunks(), file.length, {
        onTensor: (name, _e, data) => void plain.set(name, bitsOf(data).slice()),
      });
      let views = 0;
      await streamSafetensors(chunks(), file.length, {
        views: true,
        onTensor(name, e, data, view) {
          expect(bitsOf(data)).toEqual(plain.get(name));
          if (view) {
            views++;
            expect(e.dtype).toBe('F32');
            expect(data.byteOffset % 4).toBe(0);
          }
        },
      });
      if (seed >= 4) expect(views).toBeGreaterThan(0);
    }
  });

  it('lends the tensors the caller does not keep, gathered in one scratch array, equal all the same', async () => {
    const cut = mulberry32(99);
    async function* chunks() {
      for (let p = 0; p < file.length; ) {
        const n = Math.min(1 + Math.floor(cut() * 24), file.length - p);
        yield file.slice(p, p + n);
        p += n;
      }
    }
    const plain = new Map<string, Uint32Array>();
    await streamSafetensors(chunks(), file.length, {
      onTensor: (name, _e, data) => void plain.set(name, bitsOf(data).slice()),
    });
    const lent = new Set<string>();
    const kept: Float32Array[] = [];
    await streamSafetensors(chunks(), file.length, {
      views: true,
      keeps: (e) => e.name === 'a' || e.name === 'g',
      onTensor(name, _e, data, view) {
        expect(bitsOf(data)).toEqual(plain.get(name));
        if (view) lent.add(name);
        else kept.push(data);
      },
    });
    expect(lent).toEqual(new Set(['c', 'e'])); // F32, not kept, spanning chunks of ≤ 24 bytes
    expect(kept.map((d) => bitsOf(d))).toEqual(['a', 'b', 'd', 'f', 'g'].map((n) => plain.get(n)));
  });

  it('a run file keeps copies, never views on chunks the source may reuse', async () => {
    const cfg = parseConfigText(
      JSON.stringify(
        randomConfigJson({ vocab: 50, d: 8, layers: 1, heads: 2, ff: 8, rotaryPct: 0.5, parallel: true }),
      ),
    );
    const emb = new Float32Array(24).map((_, i) => i + 0.25);
    const run = writeSafetensors(
      [
        { name: 'gpt_neox.embed_in:out', dtype: 'F32', shape: [3, 8], data: emb },
        { name: 'hidden_states.0', dtype: 'F32', shape: [3, 8], data: emb.map((v, i) => (i === 5 ? -v : v)) },
      ],
      { tokens: '[1, 2, 3]' },
    );
    const chunk = run.slice();
    async function* one() {
      yield chunk;
    }
    const r = await readRunFile(one(), run.length, cfg);
    chunk.fill(0xff); // a source reusing its buffer
    expect(Array.from(r.slots.get('embed')!.data)).toEqual(Array.from(emb));
    expect(r.handoffs).toEqual([
      { slot: 'embed', kept: 'gpt_neox.embed_in:out', other: 'hidden_states.0', differing: 1 },
    ]);
  });

  it('a run file read in small chunks equals the one read whole: slots, aliases, handoffs', async () => {
    const cfg = parseConfigText(
      JSON.stringify(
        randomConfigJson({ vocab: 50, d: 8, layers: 2, heads: 2, ff: 8, rotaryPct: 0.5, parallel: true }),
      ),
    );
    const r = mulberry32(5);
    const rand = (n: number) => new Float32Array(n).map(() => r() - 0.5);
    const h0 = rand(24);
    const h1 = rand(24);
    const fc1 = rand(24);
    const changed = h1.map((v, i) => (i % 7 === 3 ? v + 1 : v));
    const run = writeSafetensors(
      [
        { name: 'gpt_neox.embed_in:out', dtype: 'F32', shape: [3, 8], data: h0 },
        { name: 'hidden_states.0', dtype: 'F32', shape: [3, 8], data: h0 },
        { name: 'gpt_neox.layers.0.mlp.dense_h_to_4h:out', dtype: 'BF16', shape: [3, 8], data: fc1 },
        { name: 'gpt_neox.layers.0.mlp.act:in', dtype: 'F32', shape: [3, 8], data: fc1 },
        { name: 'gpt_neox.layers.0:out', dtype: 'F32', shape: [3, 8], data: h1 },
        { name: 'gpt_neox.layers.1:in', dtype: 'F32', shape: [3, 8], data: changed },
        { name: 'hidden_states.1', dtype: 'F32', shape: [3, 8], data: h1 },
      ],
      { tokens: '[1, 2, 3]' },
    );
    async function* whole() {
      yield run.slice();
    }
    const want = await readRunFile(whole(), run.length, cfg);
    // fc1 stored in bf16 under one name and f32 under the other; layers.1:in changed at 3 elements.
    expect(want.handoffs.map((h) => h.other)).toEqual([
      'gpt_neox.layers.0.mlp.act:in',
      'gpt_neox.layers.1:in',
    ]);
    expect(want.handoffs[1].differing).toBe(3);
    for (const seed of [1, 2, 3]) {
      const cut = mulberry32(seed);
      async function* small() {
        for (let p = 0; p < run.length; ) {
          const n = Math.min(1 + Math.floor(cut() * 60), run.length - p);
          yield run.slice(p, p + n);
          p += n;
        }
      }
      // As the CLI reads: aliases found equal by a native byte comparison skip the element loop.
      let asked = 0;
      const sameBytes = (a: Uint8Array, b: Uint8Array) => {
        asked++;
        return Buffer.compare(a, b) === 0;
      };
      const got = await readRunFile(small(), run.length, cfg, { sameBytes });
      expect(asked).toBe(4); // hidden_states.0, act:in, layers.1:in, hidden_states.1
      expect(got.handoffs).toEqual(want.handoffs);
      expect([...got.slots.keys()]).toEqual([...want.slots.keys()]);
      for (const [k, t] of want.slots) expect(bitsOf(got.slots.get(k)!.data)).toEqual(bitsOf(t.data));
    }
  });
});
