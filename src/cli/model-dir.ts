// Reads an HF-layout model folder (config.json + model.safetensors [+ tokenizer.json]) from disk: regular files
// only, every file-system failure reported as bad input naming the file. The weights are not read here: they
// are a source the engine reads tensor by tensor (any size; nothing holds the whole file).
import { accessSync, constants } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { ModelFiles } from '../engine/engine';
import { nodeFileSource } from '../model/stream-node';
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

export { CliInputError };

export function readModelDir(dir: string): ModelFiles {
  const root = resolve(dir);
  const what = (f?: string) => `--model ${quoteUser(f === undefined ? dir : join(dir, f))}`;
  requireFolder(root, what());
  const need = (f: string) => {
    const p = join(root, f);
    if (!exists(p, what(f))) throw new CliInputError(`${what()}: ${f} is missing`);
    return p;
  };
  const config = readTextFile(need('config.json'), what('config.json'));
  const weightsPath = need('model.safetensors');
  const size = regularFileSize(weightsPath, what('model.safetensors'));
  try {
    accessSync(weightsPath, constants.R_OK);
  } catch (e) {
    throw new CliInputError(`${what('model.safetensors')}: ${fsReason(e)}`);
  }
  const file = nodeFileSource(weightsPath, size);
  // A file-system failure while the engine reads it is bad input naming the file, as a failed read here was.
  const weights: WeightsSource = {
    bytes: size,
    open: async function* () {
      try {
        yield* file.open() as AsyncIterable<Uint8Array>;
      } catch (e) {
        throw new CliInputError(`${what('model.safetensors')}: ${fsReason(e)}`);
      }
    },
  };
  const tokPath = join(root, 'tokenizer.json');
  const tokenizer = exists(tokPath, what('tokenizer.json'))
    ? readTextFile(tokPath, what('tokenizer.json'))
    : undefined;
  return { config, weights, tokenizer, name: basename(root) };
}
