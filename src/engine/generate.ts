// Greedy generation: with a KV cache (src/engine/decode.ts; the argmax on the GPU, one id read back per
// token) and without one (the whole forward again per token, the argmax here on the read-back logits): the
// oracle of the cached loop, which gives the same ids.
import type { GemmPolicy } from '../kernels/gemm-configs';
import { type DecodeContext, Decoder } from './decode';
import { PlanError } from './plan';
import {
  EngineError,
  type ForwardOptions,
  type ForwardResult,
  type GenerateOptions,
  resolvePath,
} from './types';

/** Called with each new id and its step (0-based). */
export type OnToken = (id: number, step: number) => void;

/** What a cached generation needs from the engine. */
export interface GenerateContext extends DecodeContext {
  gemm: GemmPolicy;
  /** Throws the device's loss, if it is lost. */
  checkAlive(): void;
  /** After a failure: waits a moment for a device loss to be reported, then throws it if there is one. */
  settleLoss(): Promise<void>;
}

/**
 * `n` new ids after `prompt` (limits already checked) with a KV cache: one pass over the prompt that keeps
 * every layer's keys and values, then one single-position step per token. An aborted signal stops between
 * steps; every cache buffer goes back to the pool.
 */
export async function generateCached(
  ctx: GenerateContext,
  prompt: number[],
  n: number,
  onToken: OnToken | undefined,
  signal: AbortSignal | undefined,
  opts: GenerateOptions,
): Promise<number[]> {
  if (n === 0) return [];
  if (signal?.aborted) throw new EngineError('generation cancelled');
  const fused = resolvePath(opts.path);
  const precision = opts.precision ?? 'fp32';
  let decoder: Decoder | null = null;
  try {
    // Positions 0 .. prompt + n − 2 are run (the last new token is never fed back).
    const rows = prompt.length + n - 1;
    decoder = new Decoder(ctx, rows, { fused, precision, hooks: opts.hooks, gemm: ctx.gemm });
    const out: number[] = [];
    let next = prompt;
    for (let step = 0; step < n; step++) {
      if (signal?.aborted) throw new EngineError('generation cancelled');
      const id = await decoder.step(next);
      ctx.checkAlive();
      out.push(id);
      onToken?.(id, step);
      next = [id];
    }
    return out;
  } catch (e) {
    if (e instanceof PlanError) throw new EngineError(e.message);
    if (e instanceof EngineError) throw e;
    await ctx.settleLoss();
    throw e;
  } finally {
    decoder?.release();
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
    if (signal?.aborted) throw new EngineError('generation cancelled');
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
