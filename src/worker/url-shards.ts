// The weights of a URL model folder: model.safetensors, or model.safetensors.index.json and its shards. A shard
// is a ShardFile over the network: its header read with a Range request (the Hub and its CDN answer 206; a
// server that ignores Range sends the file, which is stopped after the bytes needed), its bytes streamed by a
// GET made when the loader gets to it. A folder with neither (only pytorch_model.bin, say) is one line.
import { INDEX_FILE, MAX_INDEX_BYTES } from '../model/shard-index';
import { type ShardedSource, type ShardFile, shardedSource } from '../model/shard-stream';
import type { WorkerError } from './api';
import { contentLength, decodeText, fetchFile, MODEL_FILES, openFile } from './url-fetch';

const fail = (kind: WorkerError['kind'], message: string): WorkerError => ({ kind, message });

/**
 * The chunks of a response body (cancelled when the reader stops early). A connection that dies mid-file is
 * one line naming the file and how far it got (kind 'model'); an abort passes through as it is.
 */
export async function* bodyChunks(
  res: Response,
  file = 'the file',
  signal?: AbortSignal,
): AsyncGenerator<Uint8Array, void> {
  const body = res.body ?? new Blob([await res.arrayBuffer()]).stream();
  const reader = body.getReader();
  let done = false;
  let bytes = 0;
  try {
    for (;;) {
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await reader.read();
      } catch (e) {
        if (signal?.aborted) throw e;
        throw fail(
          'model',
          `${file}: the download broke off after ${bytes} bytes (${e instanceof Error ? e.message : String(e)}); the model loaded before stays`,
        );
      }
      if (r.done) break;
      bytes += r.value.length;
      yield r.value;
    }
    done = true;
  } finally {
    if (!done) reader.cancel().catch(() => undefined);
  }
}

/** Bytes [start, end) of `file`: a Range request, or the start of the whole body when the server ignores it. */
async function readRange(base: URL, file: string, start: number, end: number, signal?: AbortSignal) {
  if (end <= start) return new Uint8Array(0);
  const res = await openFile(base, file, { signal, range: [start, end] });
  // 206: the body starts at `start`; 200: the server sent the file from byte 0.
  const from = res.status === 206 ? start : 0;
  const out = new Uint8Array(end - from);
  let filled = 0;
  for await (const c of bodyChunks(res, file, signal)) {
    const take = Math.min(c.length, out.length - filled);
    out.set(c.subarray(0, take), filled);
    filled += take;
    if (filled >= out.length) break;
  }
  return out.subarray(start - from, filled);
}

/** A shard over the network; `open()` downloads it again each time (a reload after a device loss). */
export function urlShard(base: URL, file: string, signal?: AbortSignal): ShardFile {
  return {
    file,
    bytes: null,
    open: async function* () {
      yield* bodyChunks(await openFile(base, file, { signal }), file, signal);
    },
    read: (start, end) => readRange(base, file, start, end, signal),
  };
}

export type UrlWeights =
  | { kind: 'single'; res: Response }
  | { kind: 'sharded'; source: ShardedSource; indexBytes: number };

/** The index text (bounded) and its shards as network files. */
async function shardsAt(base: URL, res: Response, signal?: AbortSignal): Promise<UrlWeights> {
  const len = contentLength(res);
  if (len !== null && len > MAX_INDEX_BYTES) throw fail('model', `${INDEX_FILE}: ${len} bytes, too large`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const text = decodeText(INDEX_FILE, bytes);
  const source = shardedSource(text, []);
  source.shards = source.index.shards.map((f) => urlShard(base, f, signal));
  return { kind: 'sharded', source, indexBytes: bytes.length };
}

/** One line for a folder without safetensors weights, naming pytorch_model.bin when that is what it has. */
async function noWeights(base: URL, missing: string, signal?: AbortSignal): Promise<never> {
  const bin = await fetchFile(base, 'pytorch_model.bin', { method: 'HEAD', signal }).catch(() => null);
  const binIndex =
    bin && 'res' in bin
      ? null
      : await fetchFile(base, 'pytorch_model.bin.index.json', { method: 'HEAD', signal }).catch(() => null);
  if ((bin && 'res' in bin) || (binIndex && 'res' in binIndex))
    throw fail(
      'model',
      `${base.href} has only pytorch_model.bin (PyTorch pickles): the explorer reads safetensors (model.safetensors, or ${INDEX_FILE} and its shards)`,
    );
  throw fail('model', `${missing} (and there is no ${INDEX_FILE} either)`);
}

/**
 * Opens the weights under `base`: model.safetensors (GET, its body not yet read), or when it is not there the
 * index and its shards. `sharded` true goes to the index first (a link that names shards).
 */
export async function openWeights(
  base: URL,
  signal: AbortSignal | undefined,
  sharded = false,
): Promise<UrlWeights> {
  if (!sharded) {
    const single = await fetchFile(base, MODEL_FILES.weights, { signal });
    if ('res' in single) return { kind: 'single', res: single.res };
    const idx = await fetchFile(base, INDEX_FILE, { signal });
    if ('res' in idx) return shardsAt(base, idx.res, signal);
    return noWeights(base, single.missing, signal);
  }
  return shardsAt(base, await openFile(base, INDEX_FILE, { signal }), signal);
}

/** The sizes of the weights files under `base` before any is downloaded (HEAD; the index is read). */
export async function probeWeights(base: URL): Promise<{ file: string; bytes: number | null }[]> {
  const head = await fetchFile(base, MODEL_FILES.weights, { method: 'HEAD' });
  if ('res' in head) return [{ file: MODEL_FILES.weights, bytes: contentLength(head.res) }];
  const idx = await fetchFile(base, INDEX_FILE);
  if (!('res' in idx)) return noWeights(base, head.missing);
  const w = await shardsAt(base, idx.res);
  if (w.kind !== 'sharded') return [];
  const shards = await Promise.all(
    w.source.index.shards.map(async (f) => ({
      file: f,
      bytes: contentLength(await openFile(base, f, { method: 'HEAD' })),
    })),
  );
  return [{ file: INDEX_FILE, bytes: w.indexBytes }, ...shards];
}
