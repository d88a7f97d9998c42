// Greedy generation: with a KV cache (src/engine/decode.ts: recorded steps replayed, the argmax on the GPU
// feeding the next step's token id there, several steps and both paths per submit, the ids read back by chunks)
// and without one (the whole forward again per token, the argmax here on the read-back logits): the oracle of
// the cached loop, which gives the same ids.
import type { GemmPolicy } from '../kernels/gemm-configs';
import { type DecodeContext, DecodeSession } from './decode';
import type { RecordedDecode } from './decode-record';
import { PlanError } from './plan';
import { hooksKey, type Lease, type PlanCache, pathKey } from './plan-cache';
import { foldFor } from './plan-fold';
import {
  EngineError,
  type ForwardOptions,
  type ForwardResult,
  type GenerateOptions,
  resolvePath,
} from './types';

/** Called with each new id and its step (0-based). */
export type OnToken = (id: number, step: number) => void;

/** Called once per step with that step's id of every path, in the order the paths were given. */
export type OnStep = (step: number, ids: number[]) => void;

/** What a cached generation needs from the engine. */
export interface GenerateContext {
  device: GPUDevice;
  /** Throws the device's loss, if it is lost. */
  checkAlive(): void;
  /** After a failure: waits a moment for a device loss to be reported, then throws it if there is one. */
  settleLoss(): Promise<void>;
}

/** What generatePaths needs from the engine: the recorded sessions and what a new one is made of. */
export interface PathsContext extends GenerateContext, DecodeContext {
  gemm: GemmPolicy;
  sessions: PlanCache<DecodeSession>;
  /** The custom kernel's file and text hash ('' without one). */
  kernelKey: string;
}

/**
 * `n` new ids after `prompt` (limits already checked, n > 0) on every path, each on its recorded session for
 * (path, precision, hooks, capacity), recorded now when there is none; see generateSessions. With `recorded`,
 * each path's decode as a run (decode-record.ts); with `logits` (an empty array), each path's logits rows of
 * decode steps 1..n−1 as its cached decode computed them ([n − 1, V] per path).
 */
export async function generatePaths(
  ctx: PathsContext,
  prompt: number[],
  n: number,
  paths: GenerateOptions[],
  onStep: OnStep | undefined,
  signal: AbortSignal | undefined,
  chunk: number,
  recorded?: RecordedDecode[],
  logits?: Float32Array[],
): Promise<number[][]> {
  // Positions 0 .. prompt + n − 2 are run (the last new token is never fed back).
  const rows = prompt.length + n - 1;
  const layers = ctx.model.cfg.numLayers;
  const leases: Lease<DecodeSession>[] = [];
  let failed = false;
  try {
    for (const p of paths) {
      const fused = resolvePath(p.path);
      const precision = p.precision ?? 'fp32';
      const record = recorded !== undefined;
      const key = `${pathKey(fused)}|${precision}|rows=${rows}|${hooksKey(p.hooks, layers)}|${ctx.kernelKey}${record ? '|record' : ''}`;
      const opts = { fused, precision, hooks: p.hooks, gemm: ctx.gemm, fold: foldFor(ctx.kernelKey), record };
      const lease = ctx.sessions.take(key, () => new DecodeSession(ctx, rows, opts));
      leases.push(lease);
      lease.value.prepare(prompt, n, logits !== undefined);
    }
    const sessions = leases.map((l) => l.value);
    const ids = await generateSessions(ctx, sessions, n, onStep, signal, chunk);
    // Our decode as runs: every op's rows of the prefill and of each step, by position.
    if (recorded) for (const s of sessions) recorded.push(s.recorded(n));
    // The cached decode's logits of each step (the check of the cache against the uncached forward).
    if (logits) for (const s of sessions) logits.push(await s.stepLogits(n));
    return ids;
  } catch (e) {
    failed = !(e instanceof EngineError && e.kind === 'cancelled');
    if (e instanceof PlanError) throw new EngineError(e.message, 'input');
    throw e;
  } finally {
    for (const l of leases) l.done();
    // A failed generation may leave a session half-written: record afresh next time.
    if (failed) ctx.sessions.clear();
  }
}

/** One submitted chunk of steps: its readback and the steps it holds. */
interface Chunk {
  s0: number;
  s1: number;
  staging: GPUBuffer;
  done: Promise<void>;
}

/**
 * `n` new ids after `prompt` (limits already checked) on every session (one per path, each prepared for this
 * prompt and n), with their steps interleaved: step s of every path, then step s + 1, `chunk` steps per submit.
 * The next chunk is submitted before the previous one is read, so the GPU is not left waiting for the CPU. An
 * aborted signal stops between steps (the ids of a chunk already read are delivered up to the abort).
 */
export async function generateSessions(
  ctx: GenerateContext,
  sessions: DecodeSession[],
  n: number,
  onStep: OnStep | undefined,
  signal: AbortSignal | undefined,
  chunk: number,
): Promise<number[][]> {
  const out = sessions.map((): number[] => []);
  if (n === 0) return out;
  if (signal?.aborted) throw new EngineError('generation cancelled', 'cancelled');
  const { device } = ctx;
  const per = Math.max(1, Math.min(chunk, n));
  const P = sessions.length;
  const stagings = [0, 1].map(() =>
    device.createBuffer({
      size: Math.max(16, Math.ceil((P * per * 4) / 16) * 16),
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      label: 'generate:ids',
    }),
  );
  const inFlight: Promise<unknown>[] = [];
  const submit = (c: number): Chunk => {
    const s0 = c * per;
    const s1 = Math.min(n, s0 + per);
    const staging = stagings[c % 2];
    device.pushErrorScope('validation');
    // One command buffer per step, submitted as soon as it is recorded: the GPU starts on the first step while
    // the CPU records the next.
    for (let s = s0; s < s1; s++) {
      const encoder = device.createCommandEncoder({ label: `generate step ${s}` });
      for (const sess of sessions) sess.encodeStep(encoder, s);
      if (s === s1 - 1) {
        sessions.forEach((sess, i) => {
          encoder.copyBufferToBuffer(sess.history, s0 * 4, staging, i * per * 4, (s1 - s0) * 4);
        });
      }
      device.queue.submit([encoder.finish()]);
    }
    const scope = device.popErrorScope().then((err) => {
      if (err) throw new Error(`GPU validation error in decoding: ${err.message}`);
    });
    const done = Promise.all([scope, staging.mapAsync(GPUMapMode.READ)]).then(() => undefined);
    inFlight.push(done.catch(() => null));
    return { s0, s1, staging, done };
  };
  try {
    let pending: Chunk | null = submit(0);
    while (pending) {
      const ahead: Chunk | null = pending.s1 < n ? submit(pending.s1 / per) : null;
      await pending.done;
      const ids = new Uint32Array(pending.staging.getMappedRange(0, P * per * 4).slice(0));
      pending.staging.unmap();
      for (let s = pending.s0; s < pending.s1; s++) {
        if (signal?.aborted) throw new EngineError('generation cancelled', 'cancelled');
        const step = sessions.map((_, i) => ids[i * per + (s - pending!.s0)]);
        step.forEach((id, i) => {
          out[i].push(id);
        });
        onStep?.(s, step);
        ctx.checkAlive();
      }
      if (signal?.aborted && ahead) throw new EngineError('generation cancelled', 'cancelled');
      pending = ahead;
    }
    return out;
  } catch (e) {
    if (e instanceof PlanError) throw new EngineError(e.message, 'input');
    if (e instanceof EngineError) throw e;
    await ctx.settleLoss();
    throw e;
  } finally {
    await Promise.all(inFlight);
    for (const b of stagings) b.destroy();
  }
}

/**
 * `n` new ids after `prompt` (limits already checked) by re-running the whole forward over prompt + generated
 * tokens for every new token and taking the argmax of the last logits row.
 */
export async function generateNoCache(
  forward: (tokens: number[], opts: ForwardOptions) => Promise<ForwardResult>,
  prompt: number[],
  n: number,
  onToken: OnToken | undefined,
  signal: AbortSignal | undefined,
  opts: GenerateOptions,
): Promise<number[]> {
  const ids = [...prompt];
  const out: number[] = [];
  for (let step = 0; step < n; step++) {
    if (signal?.aborted) throw new EngineError('generation cancelled', 'cancelled');
    const { dump } = await forward(ids, opts);
    const V = dump.V;
    const next = argmax(dump.logits, (ids.length - 1) * V, V);
    ids.push(next);
    out.push(next);
    onToken?.(next, step);
  }
  return out;
}

/** Index of the largest value in a[offset .. offset+n) (lowest index on ties; NaN never wins). */
export function argmax(a: ArrayLike<number>, offset: number, n: number): number {
  let best = 0;
  let bv = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    const v = a[offset + i];
    if (v > bv) {
      bv = v;
      best = i;
    }
  }
  return best;
}
