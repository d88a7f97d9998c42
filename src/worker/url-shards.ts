// The weights of a URL model folder: model.safetensors, or model.safetensors.index.json and its shards. A shard
// is a ShardFile over the network: its header read with a Range request (the Hub and its CDN answer 206; a
// server that ignores Range sends the file, which is stopped after the bytes needed), its bytes streamed by a
// GET made when the loader gets to it, never more than its listed (or announced) size. The index is read within
// a byte cap. A folder with neither (only pytorch_model.bin, say) is one line.
import { INDEX_FILE } from '../model/shard-index';
import { type ShardedSource, type ShardFile, shardedSource } from '../model/shard-stream';
import { type NetLimits, netLimits } from '../run/hub-fetch';
import type { WorkerError } from './api';
import { bodyOf, contentLength, decodeText, fetchFile, MODEL_FILES, openFile, readBody } from './url-fetch';

const fail = (kind: WorkerError['kind'], message: string): WorkerError => ({ kind, message });

/** How the requests of one load or probe are made: its signal and its bounds. */
export interface NetInit {
  signal?: AbortSignal;
  limits?: Partial<NetLimits>;
}

/**
 * The chunks of a response body (cancelled when the reader stops early): never more than `listed` bytes (the
 * size the viewer agreed to) or, without one, than the server announced, and none short of it; each piece within
 * the idle timeout. A connection that dies mid-file is one line naming the file and how far it got (kind
 * 'model'); an abort passes through as it is.
 */
export function bodyChunks(
  res: Response,
  file = 'the file',
  signal?: AbortSignal,
  listed?: number | null,
): AsyncGenerator<Uint8Array, void> {
  const announced = contentLength(res);
  return bodyOf(
    res,
    file,
    listed != null
      ? { listed }
      : announced !== null
        ? { listed: announced, from: 'the server announced' }
        : { max: Number.MAX_SAFE_INTEGER },
    signal,
  );
}

/** Bytes [start, end) of `file`: a Range request, or the start of the whole body when the server ignores it. */
async function readRange(base: URL, file: string, start: number, end: number, net: NetInit) {
  if (end <= start) return new Uint8Array(0);
  const res = await openFile(base, file, { ...net, range: [start, end] });
  // 206: the body starts at `start`; 200: the server sent the file from byte 0.
  const from = res.status === 206 ? start : 0;
  const out = new Uint8Array(end - from);
  let filled = 0;
  for await (const c of bodyOf(res, file, { max: Number.MAX_SAFE_INTEGER }, net.signal)) {
    const take = Math.min(c.length, out.length - filled);
    out.set(c.subarray(0, take), filled);
    filled += take;
    if (filled >= out.length) break;
  }
  return out.subarray(start - from, filled);
}

/**
 * A shard over the network; `open()` downloads it again each time (a reload after a device loss), never more than
 * `listed` bytes when the size is known (a Hub listing).
 */
export function urlShard(base: URL, file: string, net: NetInit = {}, listed?: number): ShardFile {
  return {
    file,
    bytes: null,
    open: async function* () {
      yield* bodyChunks(await openFile(base, file, net), file, net.signal, listed);
    },
    read: (start, end) => readRange(base, file, start, end, net),
  };
}

export type UrlWeights =
  | { kind: 'single'; res: Response }
  | { kind: 'sharded'; source: ShardedSource; indexBytes: number };

/** The index text (within the cap) and its shards as network files. */
async function shardsAt(
  base: URL,
  res: Response,
  net: NetInit,
  listed: Record<string, number> = {},
): Promise<UrlWeights> {
  const max = netLimits(net.limits).indexBytes;
  const len = contentLength(res);
  if (len !== null && len > max) {
    res.body?.cancel().catch(() => undefined);
    throw fail(
      'model',
      `${INDEX_FILE}: the server announces ${len} bytes, more than the ${max} this app reads`,
    );
  }
  const bytes = await readBody(res, INDEX_FILE, max, () => undefined, net.signal);
  const text = decodeText(INDEX_FILE, bytes);
  const source = shardedSource(text, []);
  source.shards = source.index.shards.map((f) => urlShard(base, f, net, listed[f]));
  return { kind: 'sharded', source, indexBytes: bytes.length };
}

/** One line for a folder without safetensors weights, naming pytorch_model.bin when that is what it has. */
async function noWeights(base: URL, missing: string, net: NetInit): Promise<never> {
  const head = { ...net, method: 'HEAD' as const };
  const bin = await fetchFile(base, 'pytorch_model.bin', head).catch(() => null);
  const binIndex =
    bin && 'res' in bin
      ? null
      : await fetchFile(base, 'pytorch_model.bin.index.json', head).catch(() => null);
  if ((bin && 'res' in bin) || (binIndex && 'res' in binIndex))
    throw fail(
      'model',
      `${base.href} has only pytorch_model.bin (PyTorch pickles): the explorer reads safetensors (model.safetensors, or ${INDEX_FILE} and its shards)`,
    );
  throw fail('model', `${missing} (and there is no ${INDEX_FILE} either)`);
}

/**
 * Opens the weights under `base`: model.safetensors (GET, its body not yet read), or when it is not there the
 * index and its shards. `sharded` true goes to the index first (a link that names shards); `listed` holds the
 * sizes the viewer agreed to, by file.
 */
export async function openWeights(
  base: URL,
  net: NetInit,
  sharded = false,
  listed: Record<string, number> = {},
): Promise<UrlWeights> {
  if (!sharded) {
    const single = await fetchFile(base, MODEL_FILES.weights, net);
    if ('res' in single) return { kind: 'single', res: single.res };
    const idx = await fetchFile(base, INDEX_FILE, net);
    if ('res' in idx) return shardsAt(base, idx.res, net, listed);
    return noWeights(base, single.missing, net);
  }
  return shardsAt(base, await openFile(base, INDEX_FILE, net), net, listed);
}

/** The sizes of the weights files under `base` before any is downloaded (HEAD; the index is read, capped). */
export async function probeWeights(
  base: URL,
  net: NetInit,
): Promise<{ file: string; bytes: number | null }[]> {
  const head = { ...net, method: 'HEAD' as const };
  const single = await fetchFile(base, MODEL_FILES.weights, head);
  if ('res' in single) return [{ file: MODEL_FILES.weights, bytes: contentLength(single.res) }];
  const idx = await fetchFile(base, INDEX_FILE, net);
  if (!('res' in idx)) return noWeights(base, single.missing, net);
  const w = await shardsAt(base, idx.res, net);
  if (w.kind !== 'sharded') return [];
  const shards = await Promise.all(
    w.source.index.shards.map(async (f) => ({
      file: f,
      bytes: contentLength(await openFile(base, f, head)),
    })),
  );
  return [{ file: INDEX_FILE, bytes: w.indexBytes }, ...shards];
}
