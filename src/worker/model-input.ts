// The checks an in-page model (files read by the page, Blobs, an index and its shards) gets in the worker
// before the worker is claimed: what comlink hands over is data from the page, checked, never trusted.
import { blobShard, type ShardedSource, shardedSource } from '../model/shard-stream';
import type { ModelShardsInput } from './api';
import { workerError } from './boundary';

/** The checks an in-page model (files read by the page, or a Blob) gets before the worker is claimed. */
export function checkModelInput(
  files: { config: unknown; weights: unknown; tokenizer?: unknown } | undefined,
  weights: typeof ArrayBuffer | typeof Blob,
): void {
  if (typeof files?.config !== 'string') throw workerError('model', 'config.json is missing');
  if (!(files.weights instanceof weights)) throw workerError('model', 'model.safetensors is missing');
  if (files.tokenizer !== undefined && typeof files.tokenizer !== 'string')
    throw workerError('model', 'tokenizer.json: expected text');
}

/** A model's display name from the page: at most 200 characters, 'model' when absent. */
export function displayName(name: unknown): string {
  return typeof name === 'string' && name ? name.slice(0, 200) : 'model';
}

/** An index and its shard Blobs from the page, as a sharded source (the index parsed: kind 'model' if bad). */
export function shardsOf(files: ModelShardsInput): ShardedSource {
  if (typeof files?.config !== 'string') throw workerError('model', 'config.json is missing');
  if (typeof files.index !== 'string') throw workerError('model', 'model.safetensors.index.json is missing');
  if (
    !Array.isArray(files.shards) ||
    files.shards.some((s) => !(s?.blob instanceof Blob) || typeof s.file !== 'string')
  )
    throw workerError('model', 'the shards must be files');
  if (files.tokenizer !== undefined && typeof files.tokenizer !== 'string')
    throw workerError('model', 'tokenizer.json: expected text');
  return shardedSource(
    files.index,
    files.shards.map((s) => blobShard(s.file, s.blob)),
  );
}
