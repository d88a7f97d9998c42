// Greedy generation with a KV cache, shared by the Llama family's two GPU forwards (llama-reference.ts,
// llama-fused.ts): one key and one value cache [KV, rows, hd] per layer, the prompt in one forward that writes its
// keys and values at positions 0.., then one row per new token at its position reading the cache. A forward is
// handed the positions and the caches and returns its logits rows. greedyLockstep runs several paths at once, one
// wait a step for all of them.

import { recordReadbackPacked } from '../gpu/readback';
import type { LlamaConfig } from '../numeric/types';
import type { KeptRun } from './llama-kept';

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

/** One path of a lockstep generation: its name in errors and its forward kept on the GPU at the given positions. */
export interface LockstepPath {
  who: string;
  run: (tokens: readonly number[], kv: KvRun) => Promise<KeptRun>;
}

/**
 * `n` greedy tokens after `prompt` on every path at once, each with its own caches: at each step every path's forward
 * is submitted without a wait, their slots kept on the GPU (llama-kept.ts), then the last logits row of each is read
 * back in one copy and one map — one wait a step for all the paths, and a row apiece, not the dump. The argmax is
 * greedyWithCache's (lowest id on ties) on the same rows, so the ids and rows are the same as each path's alone; a
 * path whose logits are non-finite stops there, and the first such path in order is thrown once all have run, as
 * running the paths one after the other would.
 */
export async function greedyLockstep(
  device: GPUDevice,
  cfg: LlamaConfig,
  prompt: readonly number[],
  n: number,
  paths: readonly LockstepPath[],
  signal?: AbortSignal,
  cancelled?: () => Error,
): Promise<{ ids: number[]; logits: Float32Array[] }[]> {
  const who = paths.map((p) => p.who).join(', ');
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
  const kept: KeptRun[] = [];
  try {
    const state = paths.map(() => ({
      caches: Array.from({ length: L }, (_, i) => ({ k: cache(`layers.${i}.k`), v: cache(`layers.${i}.v`) })),
      ids: [] as number[],
      logits: [] as Float32Array[],
      feed: [...prompt],
      p0: 0,
      error: null as Error | null,
    }));
    for (let s = 0; s < n; s++) {
      if (signal?.aborted) throw cancelled?.() ?? new Error('generation cancelled');
      const live = state.filter((st) => st.error === null);
      if (live.length === 0) break;
      const runs: KeptRun[] = [];
      for (const [j, st] of state.entries()) {
        if (st.error) continue;
        const r = await paths[j].run(st.feed, { p0: st.p0, rows, caches: st.caches });
        kept.push(r);
        runs.push(r);
      }
      const enc = device.createCommandEncoder({ label: 'lockstep rows' });
      const finish = recordReadbackPacked(
        device,
        enc,
        runs.map((r) => ({ src: r.need('logits').buf, bytes: V * 4, offset: (r.T - 1) * V * 4 })),
      );
      device.queue.submit([enc.finish()]);
      const lasts = await finish();
      for (const r of runs) r.release();
      live.forEach((st, j) => {
        const last = lasts[j];
        let best = 0;
        for (let c = 1; c < V; c++) if (last[c] > last[best]) best = c;
        if (!Number.isFinite(last[best])) {
          st.error = new Error(`${paths[state.indexOf(st)].who}: non-finite logits at generation step ${s}`);
          return;
        }
        st.ids.push(best);
        st.logits.push(last);
        st.p0 += st.feed.length;
        st.feed = [best];
      });
    }
    const failed = state.find((st) => st.error);
    if (failed?.error) throw failed.error;
    return state.map((st) => ({ ids: st.ids, logits: st.logits }));
  } finally {
    for (const r of kept) r.release();
    for (const b of made) b.destroy();
  }
}
