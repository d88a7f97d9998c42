// The adapter's answer decides: a model whose buffers fail to allocate (the out-of-memory error scope) is refused
// in one line with what it needs and what the adapter allows, and every buffer made is freed. A stand-in device
// reports the failure (a real one would need more memory than the test machine has).
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../model/config';
import { randomConfigJson } from '../model/random-model';
import { emptyWeights } from '../model/weights';
import { allocateChecked, ModelTooLargeError } from './install';

/** A device that makes buffers (counting live ones) and reports `oom` from the out-of-memory scope. */
function standIn(oom: boolean) {
  let live = 0;
  const scopes: string[] = [];
  const device = {
    createBuffer: (d: { size: number }) => {
      live++;
      let gone = false;
      return {
        size: d.size,
        destroy: () => {
          if (!gone) live--;
          gone = true;
        },
      };
    },
    queue: { writeBuffer: () => undefined },
    pushErrorScope: (f: string) => scopes.push(f),
    popErrorScope: async () => {
      const f = scopes.pop();
      return f === 'out-of-memory' && oom ? { message: 'Out of memory\nwhile allocating' } : null;
    },
  };
  return { device: device as unknown as GPUDevice, live: () => live };
}

const cfg = parseConfigText(
  JSON.stringify(
    randomConfigJson({ vocab: 300, d: 64, layers: 3, heads: 2, ff: 100, rotaryPct: 0.5, parallel: true }),
  ),
);
const budget = {
  bytes: null,
  source: null,
  maxBufferSize: 2 ** 28,
  maxBindingBytes: 2 ** 27,
  heldBytes: 2 ** 29,
};

describe('allocation under the out-of-memory scope', () => {
  it('an out-of-memory answer refuses the model in one line and frees every buffer made', async () => {
    (globalThis as { GPUBufferUsage?: unknown }).GPUBufferUsage ??= {
      STORAGE: 128,
      COPY_DST: 8,
      COPY_SRC: 4,
    };
    const bad = standIn(true);
    const err = await allocateChecked(bad.device, cfg, emptyWeights(cfg), true, budget).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ModelTooLargeError);
    expect((err as Error).message).toMatch(
      /^the model needs 0\.00 GiB of GPU memory for its weights \(in fp16\), but this adapter ran out of memory allocating them \(Out of memory; one buffer may hold 0\.25 GiB, one binding 0\.13 GiB, the model loaded now holds 0\.50 GiB\); nothing was kept$/,
    );
    expect(bad.live()).toBe(0);
    const good = standIn(false);
    const made = await allocateChecked(good.device, cfg, emptyWeights(cfg), true, budget);
    expect(good.live()).toBeGreaterThan(3 * 8); // every weight of every layer, the embedding and the head
    made.model.destroy();
    expect(good.live()).toBe(0);
  });
});
