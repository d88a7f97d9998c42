// Node's ShaderSource: WGSL files read from the repo's shaders/ folder (or SHADERS_DIR when bundled).
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ShaderSource } from '../gpu/pipelines';

export function shadersDir(): string {
  if (process.env.SHADERS_DIR) return resolve(process.env.SHADERS_DIR);
  return resolve(dirname(fileURLToPath(import.meta.url)), '../../shaders');
}

export function nodeShaderSource(dir = shadersDir()): ShaderSource {
  const cache = new Map<string, string>();
  return (file) => {
    let text = cache.get(file);
    if (text === undefined) {
      text = readFileSync(join(dir, file), 'utf8');
      cache.set(file, text);
    }
    return text;
  };
}
