// Reads an HF-layout model folder from disk: config.json, the weights (model.safetensors, or
// model.safetensors.index.json and its shards), tokenizer.json if there. A Hugging Face cache folder
// (models--org--name, src/cli/hf-cache.ts) opens at the snapshot its refs/main names; a snapshot folder
// (models--org--name/snapshots/<commit>) is an ordinary model folder whose files are links. Regular files only,
// every file-system failure reported as bad input naming the file. The weights are not read here: they are a
// source the engine reads tensor by tensor (any size; nothing holds a whole file).
import { accessSync, constants, readdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { ModelFiles } from '../engine/engine';
import { INDEX_FILE } from '../model/shard-index';
import { type ShardFile, shardedSource } from '../model/shard-stream';
import { nodeFileRange, nodeFileSource } from '../model/stream-node';
import type { WeightsSource } from '../model/weight-stream';
import {
  CliInputError,
  exists,
  fsReason,
  quoteUser,
  readTextFile,
  regularFileSize,
  requireFolder,
} from './files';
import { cacheSnapshot, isCacheRepo } from './hf-cache';

export { CliInputError };

/** A readable regular file's size; bad input naming it otherwise. */
function readableSize(path: string, what: string): number {
  const size = regularFileSize(path, what);
  try {
    accessSync(path, constants.R_OK);
  } catch (e) {
    throw new CliInputError(`${what}: ${fsReason(e)}`);
  }
  return size;
}

/** A file on disk as chunks, a file-system failure while the engine reads it being bad input naming it. */
function guarded(path: string, size: number, what: string) {
  const file = nodeFileSource(path, size);
  return async function* () {
    try {
      yield* file.open() as AsyncIterable<Uint8Array>;
    } catch (e) {
      throw new CliInputError(`${what}: ${fsReason(e)}`);
    }
  };
}

/** The weights of a folder: model.safetensors, or the index and its shards (checked when the engine loads). */
function weightsOf(root: string, what: (f?: string) => string): ModelFiles['weights'] {
  const single = join(root, 'model.safetensors');
  if (exists(single, what('model.safetensors'))) {
    const size = readableSize(single, what('model.safetensors'));
    const w: WeightsSource = { bytes: size, open: guarded(single, size, what('model.safetensors')) };
    return w;
  }
  const indexPath = join(root, INDEX_FILE);
  if (!exists(indexPath, what(INDEX_FILE))) {
    let names: string[] = [];
    try {
      names = readdirSync(root);
    } catch {
      // the folder was checked above; a listing failure only loses the hint below
    }
    const bin = names.find((n) => /^pytorch_model.*\.bin$/.test(n));
    throw new CliInputError(
      bin
        ? `${what()}: has only ${quoteUser(bin)} (PyTorch pickles); the explorer reads safetensors (model.safetensors or ${INDEX_FILE} and its shards)`
        : `${what()}: model.safetensors is missing (and there is no ${INDEX_FILE})`,
    );
  }
  const src = shardedSource(readTextFile(indexPath, what(INDEX_FILE)), []);
  src.shards = src.index.shards.map((name): ShardFile => {
    const p = join(root, name);
    if (!exists(p, what(name)))
      throw new CliInputError(`${what(INDEX_FILE)}: shard ${quoteUser(name)} is missing`);
    const size = readableSize(p, what(name));
    return {
      file: name,
      bytes: size,
      open: guarded(p, size, what(name)),
      read: async (start, end) => {
        try {
          return await nodeFileRange(p, start, end);
        } catch (e) {
          throw new CliInputError(`${what(name)}: ${fsReason(e)}`);
        }
      },
    };
  });
  return src;
}

/** `name` of a cache folder `models--org--name`, or null. */
function repoName(folder: string): string | null {
  const m = /^models--[^-]+(?:-[^-]+)*?--(.+)$/.exec(folder);
  return m ? m[1] : null;
}

export function readModelDir(dir: string): ModelFiles {
  let root = resolve(dir);
  const what0 = `--model ${quoteUser(dir)}`;
  requireFolder(root, what0);
  let name = basename(root);
  // models--org--name/snapshots/<commit>: named after the repository, not the commit.
  if (/^[0-9a-f]{40}$/.test(name) && basename(dirname(root)) === 'snapshots')
    name = repoName(basename(dirname(dirname(root)))) ?? name;
  if (isCacheRepo(root)) {
    name = repoName(basename(root)) ?? name;
    root = cacheSnapshot(root);
  }
  const what = (f?: string) => `--model ${quoteUser(f === undefined ? dir : join(dir, f))}`;
  const need = (f: string) => {
    const p = join(root, f);
    if (!exists(p, what(f))) throw new CliInputError(`${what()}: ${f} is missing`);
    return p;
  };
  const config = readTextFile(need('config.json'), what('config.json'));
  const weights = weightsOf(root, what);
  const tokPath = join(root, 'tokenizer.json');
  const tokenizer = exists(tokPath, what('tokenizer.json'))
    ? readTextFile(tokPath, what('tokenizer.json'))
    : undefined;
  return { config, weights, tokenizer, name };
}
