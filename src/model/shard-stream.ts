// Sharded weights as a source: the index plus one readable file per shard (a File, a download, a file on disk).
// Each shard's header is read first — a few bytes by a ranged read where the source has one, else from the
// start of its stream, which is then stopped — so that the index is checked against every header
// (src/model/shard-index.ts) before any tensor is read or uploaded; then the shards stream one after the other,
// each file never held whole (src/model/weight-stream.ts).

import { ModelLoadError } from './errors';
import {
  headerPastEndError,
  parseHeaderSection,
  readHeaderLength,
  type SafetensorsHeader,
  tooShortError,
} from './safetensors';
import {
  checkShards,
  INDEX_FILE,
  mergeHeaders,
  parseShardIndex,
  type ShardHeader,
  type ShardIndex,
} from './shard-index';
import { IGNORED_BUFFER } from './weights';

type Chunks = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** One shard file. */
export interface ShardFile {
  /** Its name in the index's weight map. */
  file: string;
  /** Its size in bytes, when known (checked against its header). */
  bytes: number | null;
  /** A fresh stream of its bytes from byte 0 (as often as needed: a reload after a device loss). */
  open(): Chunks;
  /**
   * Bytes [start, end) of the file (fewer where it ends first): reads the header without starting the whole
   * file. Optional: without it the header is read from the start of open()'s stream.
   */
  read?(start: number, end: number): Promise<Uint8Array>;
}

/** A sharded checkpoint: its index and its shards, streamed shard by shard. */
export interface ShardedSource {
  kind: 'sharded';
  index: ShardIndex;
  shards: ShardFile[];
}

export function isShardedSource(w: unknown): w is ShardedSource {
  return typeof w === 'object' && w !== null && (w as ShardedSource).kind === 'sharded';
}

/** A sharded source from the index's text and the shard files (the index names which are needed). */
export function shardedSource(indexText: string, shards: ShardFile[]): ShardedSource {
  return { kind: 'sharded', index: parseShardIndex(indexText), shards };
}

/** The first `n` bytes of a stream (fewer when it ends first); the stream is stopped after them. */
async function prefixOf(source: Chunks, n: number): Promise<Uint8Array> {
  const out = new Uint8Array(n);
  let filled = 0;
  if (typeof (source as ReadableStream<Uint8Array>).getReader === 'function') {
    const reader = (source as ReadableStream<Uint8Array>).getReader();
    try {
      while (filled < n) {
        const r = await reader.read();
        if (r.done) break;
        const take = Math.min(r.value.length, n - filled);
        out.set(r.value.subarray(0, take), filled);
        filled += take;
      }
    } finally {
      reader.cancel().catch(() => undefined);
    }
    return out.subarray(0, filled);
  }
  const it = (source as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  try {
    while (filled < n) {
      const r = await it.next();
      if (r.done) break;
      const take = Math.min(r.value.length, n - filled);
      out.set(r.value.subarray(0, take), filled);
      filled += take;
    }
  } finally {
    await it.return?.();
  }
  return out.subarray(0, filled);
}

/** The first read of a shard: its length prefix and, usually, its whole header. */
const HEAD_BYTES = 64 << 10;

/** Bytes [start, end) of a shard: its ranged read, or the start of its stream. */
async function readRange(s: ShardFile, start: number, end: number): Promise<Uint8Array> {
  if (s.read) return s.read(start, end);
  return (await prefixOf(s.open(), end)).subarray(start);
}

/** Reads and validates one shard's header (nothing past it). */
export async function readShardHeader(s: ShardFile): Promise<ShardHeader> {
  // One read of the first 64 KiB holds the whole header of most shards; a longer header takes a second read.
  const first = await readRange(s, 0, s.bytes === null ? HEAD_BYTES : Math.min(HEAD_BYTES, s.bytes));
  if (first.length < 8) throw tooShortError(first.length, s.file);
  const n = readHeaderLength(first, s.file);
  if (s.bytes !== null && n > s.bytes - 8) throw headerPastEndError(n, s.bytes - 8, s.file);
  const json = 8 + n <= first.length ? first.subarray(8, 8 + n) : await readRange(s, 8, 8 + n);
  if (json.length < n) throw headerPastEndError(n, json.length, s.file);
  const dataSize = s.bytes === null ? null : s.bytes - 8 - n;
  const section = parseHeaderSection(json, dataSize, s.file, { ignore: (t) => IGNORED_BUFFER.test(t) });
  // The dtypes of every tensor (ignored ones too) for the index's total size; the JSON was checked above.
  const raw = JSON.parse(new TextDecoder().decode(json)) as Record<string, { dtype?: unknown }>;
  const all = new Map<string, { dtype: string; bytes: number }>();
  for (const e of section.sorted)
    all.set(e.name, { dtype: String(raw[e.name]?.dtype), bytes: e.end - e.begin });
  return { file: s.file, header: section.header, all, bytes: 8 + n + section.dataEnd };
}

/** The shards' headers read and checked against the index, with the shards in the index's order. */
export async function planShards(
  src: ShardedSource,
  signal?: AbortSignal,
): Promise<{ heads: ShardHeader[]; shards: ShardFile[] }> {
  const byName = new Map(src.shards.map((s) => [s.file, s]));
  if (byName.size !== src.shards.length)
    throw new ModelLoadError(INDEX_FILE, 'two shard files have the same name');
  for (const name of src.index.shards)
    if (!byName.has(name)) throw new ModelLoadError(INDEX_FILE, `shard '${name}' is missing`, name);
  const shards = src.index.shards.map((n) => byName.get(n)!);
  const extra = src.shards.find((s) => !src.index.shards.includes(s.file));
  if (extra) throw new ModelLoadError(INDEX_FILE, `'${extra.file}' is not a shard of this index`, extra.file);
  const heads: ShardHeader[] = [];
  for (const s of shards) {
    if (signal?.aborted) throw new DOMException('the load was aborted', 'AbortError');
    heads.push(await readShardHeader(s));
  }
  checkShards(src.index, heads);
  return { heads, shards };
}

export { mergeHeaders };

/** Refuses a shard whose header, read again as it streams, is not the one checked before (the file changed). */
export function sameHeader(before: ShardHeader, after: SafetensorsHeader): void {
  const a = before.header.entries;
  const b = after.entries;
  const same =
    a.size === b.size &&
    before.header.ignored.length === after.ignored.length &&
    [...a].every(([n, e]) => {
      const f = b.get(n);
      return (
        f !== undefined &&
        f.dtype === e.dtype &&
        f.begin === e.begin &&
        f.end === e.end &&
        f.shape.length === e.shape.length &&
        f.shape.every((x, i) => x === e.shape[i])
      );
    });
  if (!same)
    throw new ModelLoadError(
      before.file,
      'changed while it was read (its header is not the one checked before)',
    );
}

/** A shard in memory (tests, small files). */
export function bytesShard(file: string, bytes: Uint8Array, chunkBytes = 1 << 20): ShardFile {
  return {
    file,
    bytes: bytes.length,
    open: async function* () {
      for (let at = 0; at < bytes.length; at += chunkBytes) yield bytes.subarray(at, at + chunkBytes);
    },
    read: async (start, end) => bytes.slice(start, Math.min(end, bytes.length)),
  };
}

/** A shard that is a Blob (a File picked or dropped, a cached download): ranged reads by slicing. */
export function blobShard(file: string, blob: Blob): ShardFile {
  return {
    file,
    bytes: blob.size,
    open: () => blob.stream(),
    read: async (start, end) => new Uint8Array(await blob.slice(start, end).arrayBuffer()),
  };
}
