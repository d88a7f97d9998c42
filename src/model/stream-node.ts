// Node only: a file on disk as an async stream of chunks, for streamSafetensors.

import { open } from 'node:fs/promises';
import type { WeightsSource } from './weight-stream';

/**
 * The bytes of the file at `path` in chunks of `chunkBytes` (the last one shorter), each in a fresh buffer, or,
 * with `reuse`, each in the same buffer, overwritten when the next is asked for: for a consumer that is done with
 * a chunk before it asks for the next (streamSafetensors is; a view it lends is valid until its callback settles),
 * with no allocation per chunk. The file is closed when the iteration ends, fails or is stopped early.
 */
export async function* nodeFileStream(
  path: string,
  chunkBytes = 4 << 20,
  reuse = false,
): AsyncGenerator<Uint8Array, void> {
  if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1) {
    throw new RangeError(`nodeFileStream: chunkBytes must be a positive integer, got ${chunkBytes}`);
  }
  const fh = await open(path, 'r');
  let held: Uint8Array | null = null;
  try {
    for (;;) {
      const buf: Uint8Array = reuse ? (held ??= new Uint8Array(chunkBytes)) : new Uint8Array(chunkBytes);
      let filled = 0;
      while (filled < chunkBytes) {
        const { bytesRead } = await fh.read(buf, filled, chunkBytes - filled, null);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      if (filled === 0) return;
      yield filled === chunkBytes ? buf : buf.subarray(0, filled);
      if (filled < chunkBytes) return;
    }
  } finally {
    await fh.close();
  }
}

/** A model.safetensors on disk as a WeightsSource: read tensor by tensor, never whole; reopened on reload. */
export function nodeFileSource(path: string, bytes: number, chunkBytes?: number): WeightsSource {
  return { open: () => nodeFileStream(path, chunkBytes), bytes };
}

/** Bytes [start, end) of the file at `path` (fewer where it ends first): a shard's header without the rest. */
export async function nodeFileRange(path: string, start: number, end: number): Promise<Uint8Array> {
  const fh = await open(path, 'r');
  try {
    const buf = new Uint8Array(Math.max(0, end - start));
    let filled = 0;
    while (filled < buf.length) {
      const { bytesRead } = await fh.read(buf, filled, buf.length - filled, start + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return buf.subarray(0, filled);
  } finally {
    await fh.close();
  }
}
