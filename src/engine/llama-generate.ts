// Greedy generation with a KV cache, shared by the Llama family's two GPU forwards (llama-reference.ts,
// llama-fused.ts): one key and one value cache [KV, rows, hd] per layer, the prompt in one forward that writes its
// keys and values at positions 0.., then one row per new token at its position reading the cache. A forward is
// handed the positions and the caches and returns its logits rows.

import type { LlamaConfig } from '../numeric/types';

/** Where a cached forward's rows sit (positions p0..), and each layer's caches of `rows` rows. */
export interface KvRun {
  p0: number;
  rows: number;
  caches: { k: GPUBuffer; v: GPUBuffer }[];
}

/**
 * `n` greedy tokens after `prompt`; `run` is the forward on the rows fed at the given positions. Returns the new
 * ids and each step's logits row (the prompt's last row first). The caches are made here and destroyed after.
 */
export async function greedyWithCache(
  device: GPUDevice,
  cfg: LlamaConfig,
  who: string,
  prompt: readonly number[],
  n: number,
  run: (tokens: readonly number[], kv: KvRun) => Promise<{ T: number; logits: Float32Array }>,
): Promise<{ ids: number[]; logits: Float32Array[] }> {
  if (!Number.isInteger(n) || n < 1) throw new Error(`${who}: ${n} new tokens (need at least 1)`);
  if (prompt.length === 0) throw new Error(`${who}: empty prompt`);
  const { numKvHeads: KV, headDim: hd, numLayers: L, vocabSize: V } = cfg;
  const rows = prompt.length + n - 1; // the last new token is never fed back
  const bytes = KV * rows * hd * 4;
  const limit = device.limits.maxStorageBufferBindingSize;
  if (bytes > limit)
    throw new Error(
      `${who}: a KV cache of ${rows} rows (${bytes} B) exceeds the device's ${limit} B binding limit`,
    );
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const made: GPUBuffer[] = [];
  const cache = (label: string) => {
    const b = device.createBuffer({ size: Math.max(16, bytes), usage, label });
    made.push(b);
    return b;
  };
  try {
    const caches = Array.from({ length: L }, (_, i) => ({
      k: cache(`layers.${i}.k`),
      v: cache(`layers.${i}.v`),
    }));
    const ids: number[] = [];
    const logits: Float32Array[] = [];
    let feed = [...prompt];
    let p0 = 0;
    for (let s = 0; s < n; s++) {
      const out = await run(feed, { p0, rows, caches });
      const last = out.logits.slice((out.T - 1) * V, out.T * V);
      let best = 0;
      for (let j = 1; j < V; j++) if (last[j] > last[best]) best = j;
      if (!Number.isFinite(last[best])) throw new Error(`${who}: non-finite logits at generation step ${s}`);
      ids.push(best);
      logits.push(last);
      p0 += feed.length;
      feed = [best];
    }
    return { ids, logits };
  } finally {
    for (const b of made) b.destroy();
  }
}
