// A forward's dispatches submitted in several command buffers, each submitted as soon as it is encoded, so the GPU
// works on the first while the CPU encodes the next: the same dispatches in the same order (the same bits). One rule
// for how many buffers (chunkRanges) and one loop that encodes and submits them (submitInChunks), shared by
// GPT-NeoX's forward and its benchmark timing (engine/forward.ts, engine/time-forward.ts) and the Llama fused
// forward (engine/llama-fused-submit.ts).
import type { Program } from './program';
import type { GpuTimer } from './timestamps';

/**
 * Command buffers of a forward where the caller names none: DEFAULT_CHUNKS, each of at least CHUNK_MIN dispatches (a
 * forward of fewer than 2 × CHUNK_MIN dispatches stays in one). One buffer left the GPU idle while the CPU encoded and
 * submitted it, 1.1–3.7 ms of each forward's wall time: H100, 2026-11-27, two calls (bench/RESULTS.md "GEMM workgroup
 * order, chunked submits"), SmolLM2-135M T = 128 6.2–7.7 ms in one buffer, 5.5–6.1 in 4, 5.7 in 8; Qwen2.5-0.5B
 * T = 512 23.7–25.0, 22.6–23.3, 22.5–22.6; the GPU's work the same.
 */
export const DEFAULT_CHUNKS = 8;
export const CHUNK_MIN = 16;

/** A command buffer's dispatches: [start, end) in the program's order. */
export type DispatchRange = readonly [number, number];

/**
 * The ranges of `count` dispatches in `chunks` command buffers (where not given: DEFAULT_CHUNKS, fewer where a buffer
 * would hold under CHUNK_MIN, at least one): consecutive, in order, covering every dispatch once, their sizes within
 * one of each other. More buffers than dispatches are `count` buffers (none is empty); no dispatch is one empty
 * buffer. A count of buffers that is not a positive integer is refused.
 */
export function chunkRanges(count: number, chunks?: number): DispatchRange[] {
  if (!Number.isInteger(count) || count < 0) throw new Error(`chunkRanges: ${count} dispatches`);
  if (chunks !== undefined && !(Number.isInteger(chunks) && chunks >= 1))
    throw new Error(`submit chunks: ${chunks} command buffers (a whole number, at least 1)`);
  const n = Math.max(1, Math.min(count, chunks ?? Math.min(DEFAULT_CHUNKS, Math.floor(count / CHUNK_MIN))));
  return Array.from(
    { length: n },
    (_, i) => [Math.floor((i * count) / n), Math.floor(((i + 1) * count) / n)] as const,
  );
}

export interface ChunkedSubmit {
  /** The command encoders' label. */
  label: string;
  /** Each dispatch in a timed pass of its own (Program.encode); the caller resolves it in `last`. */
  timer?: GpuTimer | null;
  /** Commands before the first dispatch, in the first buffer (a timestamp). */
  first?: (enc: GPUCommandEncoder) => void;
  /** Commands after the last dispatch, in the last buffer (readback copies, a timer's resolve). */
  last?: (enc: GPUCommandEncoder) => void;
}

/**
 * Encodes `program`'s dispatches one range of `ranges` to a command buffer, each submitted as soon as it is
 * finished. Returns the CPU's ms encoding (encoders, passes, finish) and submitting, summed over the buffers.
 */
export function submitInChunks(
  device: GPUDevice,
  program: Program,
  ranges: readonly DispatchRange[],
  o: ChunkedSubmit,
): { encodeMs: number; submitMs: number } {
  let [encodeMs, submitMs] = [0, 0];
  ranges.forEach((range, i) => {
    const t0 = performance.now();
    const enc = device.createCommandEncoder({ label: o.label });
    if (i === 0) o.first?.(enc);
    program.encode(enc, o.timer, undefined, range);
    if (i === ranges.length - 1) o.last?.(enc);
    const buffer = enc.finish();
    const t1 = performance.now();
    device.queue.submit([buffer]);
    encodeMs += t1 - t0;
    submitMs += performance.now() - t1;
  });
  return { encodeMs, submitMs };
}
