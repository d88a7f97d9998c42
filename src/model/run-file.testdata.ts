// What the run-file reader's tests write and read (run-file.test.ts, run-file-llama.test.ts): tensors of one value,
// a run's metadata, a whole file read at once, and the check that a file is refused in one line of kind 'model'.
import { expect } from 'vitest';
import type { ModelConfig } from '../numeric/types';
import { readRunFile } from './run-file';
import type { TensorToWrite } from './safetensors-write';

/** An F32 tensor of the shape, every value `fill`. */
export const filled = (name: string, shape: number[], fill = 0.5): TensorToWrite => ({
  name,
  dtype: 'F32',
  shape,
  data: new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(fill),
});

/** A run's metadata: its tokens, and `over` beside or over them. */
export const metaOf = (tokens: readonly number[], over: Record<string, string> = {}) => ({
  tokens: JSON.stringify(tokens),
  ...over,
});

/** Reads whole files as runs of the model (`total`, the size the reader is told), and checks refusals. */
export function runReader(cfg: ModelConfig) {
  async function read(bytes: Uint8Array, total: number | null = bytes.length) {
    async function* one() {
      yield bytes;
    }
    return readRunFile(one(), total, cfg, { file: 'run.safetensors' });
  }
  /** The file is refused, in one line of kind 'model' matching the pattern. */
  async function refused(bytes: Uint8Array, pattern: RegExp) {
    const e = await read(bytes).then(
      () => null,
      (err: unknown) => err as Error & { kind?: string },
    );
    expect(e, `expected a refusal matching ${pattern}`).not.toBeNull();
    expect(e!.kind).toBe('model');
    expect(e!.message).not.toContain('\n');
    expect(e!.message).toMatch(pattern);
  }
  return { read, refused };
}
