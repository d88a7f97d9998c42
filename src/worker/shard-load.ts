// Sharded weights into the engine from the worker (dropped files, a URL folder, the Hub): the engine reads every
// shard's header and checks it against the index before any upload, then streams the shards one by one; each
// shard is hashed on its way in and checked against the sha256 the caller names for it (a link, the Hub's
// listing) as soon as it ends, and the model's own sha256 (of the shards' manifest) when the last one ends —
// before the engine installs the model, so a refused shard leaves the model loaded before in place.
import type { Engine } from '../engine/engine';
import { manifestSha256 } from '../model/shard-index';
import type { ShardedSource } from '../model/shard-stream';
import type { LoadedModel, LoadOptions, WorkerError } from './api';
import { hashChunks } from './url-model';

const fail = (kind: WorkerError['kind'], message: string): WorkerError => ({ kind, message });

/** The refusal of a shard whose bytes are not the ones named for it. */
function shardMismatch(file: string, actual: string, expected: string): WorkerError {
  return fail(
    'model-mismatch',
    `${file} hashes to sha256 ${actual.slice(0, 16)}…, but ${expected.slice(0, 16)}… is named for it: ` +
      'these are not the weights named, so nothing was loaded.',
  );
}

/** The refusal of shards that are each fine but are not, together, the model a run names. */
function modelMismatch(actual: string, expected: string): WorkerError {
  return fail(
    'model-mismatch',
    `the shards make sha256 ${actual.slice(0, 16)}…, but the run names ${expected.slice(0, 16)}…: ` +
      'these are not the weights it was made with, so nothing was loaded.',
  );
}

export async function loadShards(
  engine: Engine,
  f: {
    config: string;
    tokenizer: string | undefined;
    name: string;
    source: ShardedSource;
    onProgress?: (loaded: number, total: number | null, file: string) => void;
    onDownloaded?: () => void;
    signal?: AbortSignal;
  },
  options: LoadOptions | undefined,
  onLoaded: (m: LoadedModel) => void,
): Promise<LoadedModel> {
  const expect = options?.expectFiles ?? {};
  for (const file of Object.keys(expect))
    if (!f.source.index.shards.includes(file))
      throw fail(
        'model-mismatch',
        `the run names shard ${file}, which this index does not have: nothing was loaded`,
      );
  const shas = new Map<string, string>();
  let current = f.source.index.shards[0] ?? '';
  let bytes = 0;
  const hashed: ShardedSource = {
    ...f.source,
    shards: f.source.shards.map((s) => ({
      ...s,
      open: () => {
        current = s.file;
        return hashChunks(s.open(), (hex, n) => {
          const want = expect[s.file] ?? shas.get(s.file); // a reload must read the same bytes again
          if (want !== undefined && want !== hex) throw shardMismatch(s.file, hex, want);
          if (!shas.has(s.file)) bytes += n;
          shas.set(s.file, hex);
          if (shas.size === f.source.index.shards.length) {
            const sha = manifestSha256(shas);
            const named = options?.expectSha256;
            if (typeof named === 'string' && named !== sha) throw modelMismatch(sha, named);
            f.onDownloaded?.();
          }
        });
      },
    })),
  };
  const info = await engine.loadModelStream({
    config: f.config,
    tokenizer: f.tokenizer,
    name: f.name,
    weights: hashed,
    totalBytes: null,
    onProgress: (loaded, total) => f.onProgress?.(loaded, total, current),
    signal: f.signal,
  });
  const loaded: LoadedModel = {
    ...info,
    sha256: manifestSha256(shas),
    weightsBytes: bytes,
    files: Object.fromEntries([...shas].sort(([a], [b]) => (a < b ? -1 : 1))),
  };
  onLoaded(loaded);
  return loaded;
}
