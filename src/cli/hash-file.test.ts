// hashFile against the sha256 the import computed before it (node:crypto over the bytes streamed on the main thread)
// and @noble/hashes (the browser's), on random bytes of odd lengths, and against FIPS 180-2's vectors.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { afterAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../numeric/random';
import { hashFile } from './hash-file';

const dir = mkdtempSync(join(tmpdir(), 'hash-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, bytes: Uint8Array): string {
  const p = join(dir, name);
  writeFileSync(p, bytes);
  return p;
}

describe('hashFile', () => {
  it('gives the known sha256 of "abc" and of the empty file', async () => {
    const abc = await hashFile(file('abc', new TextEncoder().encode('abc'))).done;
    expect(abc).toEqual({
      sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      bytes: 3,
    });
    const empty = await hashFile(file('empty', new Uint8Array(0))).done;
    expect(empty.sha256).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('equals the streamed node:crypto hash and noble’s on random bytes of odd lengths', async () => {
    const rand = mulberry32(31337);
    for (const n of [1, 55, 56, 63, 64, 65, 4095, (4 << 20) + 3, (9 << 20) - 1]) {
      const bytes = new Uint8Array(n);
      for (let i = 0; i < n; i++) bytes[i] = Math.floor(rand() * 256);
      const old = createHash('sha256');
      for (let p = 0; p < n; p += 1 << 20) old.update(bytes.subarray(p, p + (1 << 20)));
      const want = old.digest('hex');
      expect(bytesToHex(sha256(bytes))).toBe(want);
      expect(await hashFile(file(`r${n}`, bytes)).done).toEqual({ sha256: want, bytes: n });
    }
  });

  it('rejects with the file-system code where the file cannot be read', async () => {
    await expect(hashFile(join(dir, 'absent')).done).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
