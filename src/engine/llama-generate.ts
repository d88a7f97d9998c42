// Greedy generation with a KV cache, shared by the Llama family's two GPU forwards (llama-reference.ts,
// llama-fused.ts): one key and one value cache [KV, rows, hd] per layer, the prompt in one forward that writes its
// keys and values at positions 0.., then one row per new token at its position reading the cache. A forward is
// handed the positions and the caches and returns its logits rows. greedyLockstep runs several paths at once with
// the argmax on the GPU: no wait between steps.

import type { PipelineCache } from '../gpu/pipelines';
import { Program } from '../gpu/program';
import { argmaxRow } from '../kernels/argmax';
import type { LlamaConfig } from '../numeric/types';
import { slotWidth } from '../ops/widths';
import type { KeptRun } from './llama-kept';

/** Where a cached forward's rows sit (positions p0..), and each layer's caches of `rows` rows. */
export interface KvRun {
  p0: number;
  rows: number;
  caches: { k: GPUBuffer; v: GPUBuffer }[];
}

/**
 * The rows a generation of `n` tokens after `prompt` caches (the last new token is never fed back) and the bytes of
 * one layer's key or value cache [KV, rows, hd]; refused in one line before any buffer is made.
 */
function kvCacheSize(device: GPUDevice, cfg: LlamaConfig, who: string, prompt: readonly number[], n: number) {
  if (!Number.isInteger(n) || n < 1) throw new Error(`${who}: ${n} new tokens (need at least 1)`);
  if (prompt.length === 0) throw new Error(`${who}: empty prompt`);
  const rows = prompt.length + n - 1;
  const bytes = rows * slotWidth(cfg, 'kv') * 4;
  const limit = device.limits.maxStorageBufferBindingSize;
  if (bytes > limit)
    throw new Error(
      `${who}: a KV cache of ${rows} rows (${bytes} B) exceeds the device's ${limit} B binding limit`,
    );
  return { rows, bytes };
}

/** The greedy pick of a logits row: the first of its largest (lowest id on ties), as HF's argmax. */
function argmaxOf(row: Float32Array): number {
  let best = 0;
  for (let j = 1; j < row.length; j++) if (row[j] > row[best]) best = j;
  return best;
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
  const { rows, bytes } = kvCacheSize(device, cfg, who, prompt, n);
  const { numLayers: L, vocabSize: V } = cfg;
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
      const best = argmaxOf(last);
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
  /** `ids`, where given, holds the fed token ids on the GPU (`tokens` then give their count alone). */
  run: (tokens: readonly number[], kv: KvRun, ids?: GPUBuffer) => Promise<KeptRun>;
}

/** Steps whose rows one staging buffer holds per path (64 MiB of rows at most). */
const ROWS_BYTES = 2 ** 26;

/**
 * `n` greedy tokens after `prompt` on every path at once, each with its own caches, without a wait between steps:
 * each step's forward is submitted with its dump kept on the GPU (llama-kept.ts), the argmax of its last logits row
 * (shaders/reference/argmax.wgsl) writes the id the next step's forward reads, and the row and that id are copied
 * aside; the rows come back once per chunk of steps (all of them where they fit in 64 MiB). The ids are then taken
 * again on the CPU by greedyWithCache's argmax (lowest id on ties) from the rows, so ids, rows and a non-finite row's
 * error are each path's alone; an id the GPU fed that differs from the CPU's is one line, never a silent wrong
 * text. The first path in order whose logits are non-finite is thrown, as running the paths one after the other would.
 */
export async function greedyLockstep(
  gpu: { device: GPUDevice; pipelines: PipelineCache },
  cfg: LlamaConfig,
  prompt: readonly number[],
  n: number,
  paths: readonly LockstepPath[],
  signal?: AbortSignal,
  cancelled?: () => Error,
  /** The rows' staging per path (tests: smaller, to read the rows back in several chunks). */
  rowsBytes = ROWS_BYTES,
): Promise<{ ids: number[]; logits: Float32Array[] }[]> {
  const { device, pipelines } = gpu;
  const who = paths.map((p) => p.who).join(', ');
  const { rows, bytes } = kvCacheSize(device, cfg, who, prompt, n);
  const { numLayers: L, vocabSize: V } = cfg;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const made: GPUBuffer[] = [];
  const make = (size: number, use: GPUBufferUsageFlags, label: string) => {
    const b = device.createBuffer({ size: Math.max(16, size), usage: use, label });
    made.push(b);
    return b;
  };
  const chunk = Math.max(1, Math.min(n, Math.floor(rowsBytes / (V * 4))));
  const staging = GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;
  try {
    const state = paths.map((_, j) => ({
      caches: Array.from({ length: L }, (_, i) => ({
        k: make(bytes, usage, `layers.${i}.k`),
        v: make(bytes, usage, `layers.${i}.v`),
      })),
      next: make(4, usage, `path ${j} next id`),
      ids: [] as number[],
      logits: [] as Float32Array[],
      p0: 0,
      error: null as Error | null,
    }));
    for (let s0 = 0; s0 < n; s0 += chunk) {
      const c = Math.min(chunk, n - s0);
      const rowBufs = state.map((_, j) => make(c * V * 4, staging, `path ${j} rows`));
      const idBufs = state.map((_, j) => make(c * 4, staging, `path ${j} ids`));
      for (let s = s0; s < s0 + c; s++) {
        if (signal?.aborted) throw cancelled?.() ?? new Error('generation cancelled');
        for (const [j, st] of state.entries()) {
          const first = s === 0;
          const T = first ? prompt.length : 1;
          const r = await paths[j].run(
            first ? prompt : [0],
            { p0: st.p0, rows, caches: st.caches },
            first ? undefined : st.next,
          );
          const program = new Program(device, pipelines);
          try {
            program.add(
              argmaxRow(`${paths[j].who} argmax`, { x: r.need('logits').buf, out: st.next }, (T - 1) * V, V),
            );
            const enc = device.createCommandEncoder({ label: 'lockstep argmax' });
            program.encode(enc);
            enc.copyBufferToBuffer(
              r.need('logits').buf,
              (T - 1) * V * 4,
              rowBufs[j],
              (s - s0) * V * 4,
              V * 4,
            );
            enc.copyBufferToBuffer(st.next, 0, idBufs[j], (s - s0) * 4, 4);
            device.queue.submit([enc.finish()]);
          } finally {
            program.dispose();
            r.release();
          }
          st.p0 += T;
        }
      }
      await Promise.all([...rowBufs, ...idBufs].map((b) => b.mapAsync(GPUMapMode.READ)));
      state.forEach((st, j) => {
        const all = new Float32Array(rowBufs[j].getMappedRange().slice(0, c * V * 4));
        const fed = new Uint32Array(idBufs[j].getMappedRange().slice(0, c * 4));
        for (let k = 0; k < c && st.error === null; k++) {
          const last = all.slice(k * V, (k + 1) * V);
          const best = argmaxOf(last);
          if (!Number.isFinite(last[best])) {
            st.error = new Error(`${paths[j].who}: non-finite logits at generation step ${s0 + k}`);
            break;
          }
          if (fed[k] !== best)
            throw new Error(
              `${paths[j].who}: the GPU's argmax fed id ${fed[k]} at generation step ${s0 + k}, the row's is ${best}`,
            );
          st.ids.push(best);
          st.logits.push(last);
        }
      });
      for (const b of [...rowBufs, ...idBufs]) b.unmap();
    }
    const failed = state.find((st) => st.error);
    if (failed?.error) throw failed.error;
    return state.map((st) => ({ ids: st.ids, logits: st.logits }));
  } finally {
    for (const b of made) b.destroy();
  }
}
