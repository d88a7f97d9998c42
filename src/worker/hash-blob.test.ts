// The run files' sha256 in the worker: crypto.subtle over the whole file and @noble/hashes over its stream give the
// hex the import gave before (noble, chunk by chunk), on random bytes of odd lengths and FIPS 180-2's vectors; files
// past the limit together are hashed one after another; a link's other sha256 is refused, naming the file.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../numeric/random';
import { hashBlobs, streamHash } from './hash-blob';
import { checkedHashes } from './runs';

function randomBlob(n: number, seed: number): { blob: Blob; hex: string } {
  const r = mulberry32(seed);
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i++) bytes[i] = Math.floor(r() * 256);
  return { blob: new Blob([bytes]), hex: createHash('sha256').update(bytes).digest('hex') };
}

describe('hashBlobs', () => {
  it('gives the known sha256 of "abc" and of nothing, both ways', async () => {
    const blobs = [new Blob(['abc']), new Blob([])];
    const want = [
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    ];
    expect(await Promise.all(hashBlobs(blobs, undefined, true))).toEqual(want);
    expect(await Promise.all(hashBlobs(blobs, undefined, false))).toEqual(want);
  });

  it('equals the streamed hash of before on random bytes of odd lengths', async () => {
    const cases = [1, 55, 63, 64, 65, 1001, (1 << 20) + 7, (3 << 20) - 1].map((n, i) =>
      randomBlob(n, 90 + i),
    );
    const blobs = cases.map((c) => c.blob);
    const want = cases.map((c) => c.hex);
    expect(await Promise.all(hashBlobs(blobs, undefined, true))).toEqual(want);
    expect(await Promise.all(hashBlobs(blobs, undefined, false))).toEqual(want);
    for (const c of cases.slice(0, 3)) expect(await streamHash(c.blob)).toBe(c.hex);
  });

  it('hashes files past the limit together one after another', async () => {
    const cases = [randomBlob(3000, 1), randomBlob(2000, 2)];
    const log: string[] = [];
    const blobs = cases.map((c, i) => {
      const b = c.blob;
      const slow = {
        size: b.size,
        arrayBuffer: async () => {
          log.push(`read ${i}`);
          const bytes = await b.arrayBuffer();
          await new Promise((r) => setTimeout(r, 20));
          log.push(`read ${i} done`);
          return bytes;
        },
      };
      return slow as unknown as Blob;
    });
    const shas = await Promise.all(hashBlobs(blobs, undefined, true, 4000));
    expect(shas).toEqual(cases.map((c) => c.hex));
    expect(log).toEqual(['read 0', 'read 0 done', 'read 1', 'read 1 done']);
    log.length = 0;
    await Promise.all(hashBlobs(blobs, undefined, true, 5000));
    expect(log.slice(0, 2)).toEqual(['read 0', 'read 1']);
  });

  it("refuses a run whose sha256 is not the link's, naming the file", async () => {
    const c = randomBlob(777, 5);
    const ok = await checkedHashes(
      [{ name: 'a.safetensors', blob: c.blob, expectedSha256: c.hex }],
      new AbortController().signal,
    );
    expect(ok).toEqual([c.hex]);
    const other = '0'.repeat(64);
    await expect(
      checkedHashes(
        [
          { name: 'a.safetensors', blob: c.blob },
          { name: 'b.safetensors', blob: c.blob, expectedSha256: other },
        ],
        new AbortController().signal,
      ),
    ).rejects.toMatchObject({
      kind: 'model-mismatch',
      message: expect.stringMatching(/^b\.safetensors hashes to sha256 /),
    });
  });
});
