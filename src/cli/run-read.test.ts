// The run reader's prefetched file stream: the file's bytes in order whatever its size and the chunk size, each chunk
// intact until the next is asked for (the one after it is read meanwhile), the file closed on an early stop.
import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { prefetchedFileStream } from './run-read';

const dir = mkdtempSync(join(tmpdir(), 'run-read-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const base = Math.floor(Math.random() * 2 ** 30);

describe('prefetchedFileStream', () => {
  it('yields the whole file in order, each chunk unchanged until the next is asked for (60 seeds)', async () => {
    for (let j = 0; j < 60; j++) {
      const seed = base + j;
      let s = seed;
      const rnd = () => {
        s = (Math.imul(s, 1103515245) + 12345) >>> 0;
        return s / 2 ** 32;
      };
      const chunk = 1 + Math.floor(rnd() * 97);
      // (sizes of 0, exactly some chunks, and anything between)
      const size = j % 10 === 0 ? 0 : j % 10 === 1 ? chunk * (1 + (j % 4)) : Math.floor(rnd() * 1000);
      const bytes = Uint8Array.from({ length: size }, () => Math.floor(rnd() * 256));
      const path = join(dir, `f${j}`);
      writeFileSync(path, bytes);
      const got: number[] = [];
      for await (const c of prefetchedFileStream(path, chunk)) {
        const copy = Uint8Array.from(c);
        expect(c.length, `seed ${seed}`).toBeLessThanOrEqual(chunk);
        await new Promise((r) => setTimeout(r, 0)); // (the next read has had its time)
        expect(c, `seed ${seed}: a chunk changed before the next was asked for`).toEqual(copy);
        got.push(...c);
      }
      expect(Uint8Array.from(got), `seed ${seed}`).toEqual(bytes);
    }
  });

  it('stops early without error and closes the file', async () => {
    const path = join(dir, 'early');
    writeFileSync(path, new Uint8Array(1000).fill(7));
    // (the process's descriptors open on the file, from /proc: Linux)
    const openOn = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`) === path;
        } catch {
          return false;
        }
      }).length;
    let n = 0;
    for await (const c of prefetchedFileStream(path, 64)) {
      expect(c[0]).toBe(7);
      expect(openOn()).toBe(1);
      if (++n === 3) break;
    }
    expect(n).toBe(3);
    expect(openOn()).toBe(0);
  });
});
