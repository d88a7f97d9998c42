// Reads an HF-layout model folder (config.json + model.safetensors [+ tokenizer.json]) from disk.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { ModelFiles } from '../engine/engine';

export class CliInputError extends Error {
  override name = 'CliInputError';
}

export function readModelDir(dir: string): ModelFiles {
  const root = resolve(dir);
  if (!existsSync(root) || !statSync(root).isDirectory())
    throw new CliInputError(`--model ${dir}: not a folder`);
  const need = (f: string) => {
    const p = join(root, f);
    if (!existsSync(p)) throw new CliInputError(`--model ${dir}: ${f} is missing`);
    return p;
  };
  const config = readFileSync(need('config.json'), 'utf8');
  const weightsBuf = readFileSync(need('model.safetensors'));
  const weights = new Uint8Array(weightsBuf.buffer, weightsBuf.byteOffset, weightsBuf.byteLength);
  const tokPath = join(root, 'tokenizer.json');
  const tokenizer = existsSync(tokPath) ? readFileSync(tokPath, 'utf8') : undefined;
  return { config, weights, tokenizer, name: basename(root) };
}
