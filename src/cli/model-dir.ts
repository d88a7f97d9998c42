// Reads an HF-layout model folder (config.json + model.safetensors [+ tokenizer.json]) from disk: regular files
// only, every file-system failure reported as bad input naming the file.
import { basename, join, resolve } from 'node:path';
import type { ModelFiles } from '../engine/engine';
import { CliInputError, exists, quoteUser, readRegularFile, readTextFile, requireFolder } from './files';

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
  const weights = readRegularFile(need('model.safetensors'), what('model.safetensors'));
  const tokPath = join(root, 'tokenizer.json');
  const tokenizer = exists(tokPath, what('tokenizer.json'))
    ? readTextFile(tokPath, what('tokenizer.json'))
    : undefined;
  return { config, weights, tokenizer, name: basename(root) };
}
