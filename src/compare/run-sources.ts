// The runs analysis's tensors on the GPU, for the rows it checks (analyze-runs.ts): a run file's slots uploaded as
// the checked rows only, plus every row of the slots an op reads whole (attention's keys and values, the whole
// layer); the checked rows of a tensor already on the GPU (the engine's taps, the oracle's forward) copied out.
// Rows are the leading axis of every tensor ([T, width] row-major, and each column piece of a split one
// [T, cols]), so the rows from..T−1 are one contiguous range of each buffer.
import type { GpuBatch, GpuTap } from '../engine/batch';
import type { DfBuffer } from '../engine/oracle-df';
import { DF_BYTES } from '../engine/oracle-df';

/** One slot of a run on the GPU: its checked rows ([T − from, width]), and every row where an op reads it whole. */
export interface UploadedSlot {
  rows: GpuTap;
  full: GpuTap | null;
}

/**
 * Sources, one slot at a time (as a run file's tensors arrive): rows from..T−1 of the slot's [T, width] f32 data
 * uploaded (the logits split like the oracle's `logitsParts`, in the same pieces), and with `whole` every row. A
 * slot given as `onGpu` (every row of it already on the GPU: our own recorded decode) is copied there instead.
 */
export function uploadSlot(
  batch: GpuBatch,
  T: number,
  slot: string,
  src: { name: string; data: Float32Array } | { onGpu: GpuTap },
  logitsParts: DfBuffer['parts'],
  from: number,
  whole: boolean,
): UploadedSlot {
  const split = slot === 'logits' && logitsParts && logitsParts.length > 1 ? logitsParts : null;
  const put = (label: string, data: Float32Array) => {
    const b = batch.buffer(data.byteLength, label);
    batch.device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
    return b;
  };
  const upload = (name: string, data: Float32Array, r0: number): GpuTap => {
    const R = T - r0;
    const width = data.length / T;
    const tag = r0 === 0 ? '' : `[${r0}:]`;
    if (split) {
      const parts = split.map((p) => {
        const piece = new Float32Array(R * p.cols);
        for (let r = 0; r < R; r++) {
          const at = (r0 + r) * width + p.col0;
          piece.set(data.subarray(at, at + p.cols), r * p.cols);
        }
        return { buffer: put(`run:${slot}${tag}[${p.col0}]`, piece), col0: p.col0, cols: p.cols };
      });
      return { name, buffer: parts[0].buffer, floats: R * width, parts };
    }
    return { name, buffer: put(`run:${slot}${tag}`, data.subarray(r0 * width)), floats: R * width };
  };
  // A slot already on the GPU: its rows copied there (split like the oracle's logits where those are).
  const copy = (tap: GpuTap, r0: number): GpuTap => {
    if (split) return splitRows(batch, tap, T, r0, split);
    return r0 === 0 ? tap : tapRows(batch, tap, T, r0);
  };
  const get = (r0: number) => ('onGpu' in src ? copy(src.onGpu, r0) : upload(src.name, src.data, r0));
  const full = from === 0 || whole ? get(0) : null;
  return { rows: from === 0 ? full! : get(from), full };
}

/** Rows from..T−1 of an unsplit f32 tap of T rows, copied into column pieces like `parts`. */
function splitRows(
  batch: GpuBatch,
  tap: GpuTap,
  T: number,
  from: number,
  parts: DfBuffer['parts'] & {},
): GpuTap {
  if (tap.parts) throw new Error(`${tap.name}: a split tap cannot be split again`);
  const R = T - from;
  const width = tap.floats / T;
  const pieces = parts.map((p) => {
    const buffer = batch.buffer(R * p.cols * 4, `rows:${tap.name}[${p.col0}]`);
    for (let r = 0; r < R; r++)
      batch.encoder.copyBufferToBuffer(
        tap.buffer,
        ((from + r) * width + p.col0) * 4,
        buffer,
        r * p.cols * 4,
        p.cols * 4,
      );
    return { buffer, col0: p.col0, cols: p.cols };
  });
  return { name: tap.name, buffer: pieces[0].buffer, floats: R * width, parts: pieces };
}

/** Rows from..T−1 of an f32 tap of T rows, copied into a buffer of the batch (the tap itself when from = 0). */
export function tapRows(batch: GpuBatch, tap: GpuTap, T: number, from: number): GpuTap {
  if (from === 0) return tap;
  const R = T - from;
  const copy = (src: GPUBuffer, width: number, label: string) => {
    const dst = batch.buffer(R * width * 4, label);
    batch.encoder.copyBufferToBuffer(src, from * width * 4, dst, 0, R * width * 4);
    return dst;
  };
  const width = tap.floats / T;
  if (tap.parts && tap.parts.length > 1) {
    const parts = tap.parts.map((p) => ({
      buffer: copy(p.buffer, p.cols, `rows:${tap.name}[${p.col0}]`),
      col0: p.col0,
      cols: p.cols,
    }));
    return { name: tap.name, buffer: parts[0].buffer, floats: R * width, parts };
  }
  return { name: tap.name, buffer: copy(tap.buffer, width, `rows:${tap.name}`), floats: R * width };
}

/** Rows from..T−1 of a df tensor of T rows, copied into a buffer of the batch (the tensor itself when from = 0). */
export function dfRows(batch: GpuBatch, t: DfBuffer, T: number, from: number, label: string): DfBuffer {
  if (from === 0) return t;
  const R = T - from;
  const copy = (src: GPUBuffer, width: number, what: string) => {
    const dst = batch.buffer(R * width * DF_BYTES, what);
    batch.encoder.copyBufferToBuffer(src, from * width * DF_BYTES, dst, 0, R * width * DF_BYTES);
    return dst;
  };
  const width = t.n / T;
  if (t.parts && t.parts.length > 1) {
    const parts = t.parts.map((p) => ({
      buffer: copy(p.buffer, p.cols, `rows:${label}[${p.col0}]`),
      col0: p.col0,
      cols: p.cols,
    }));
    return { buffer: parts[0].buffer, n: R * width, parts };
  }
  return { buffer: copy(t.buffer, width, `rows:${label}`), n: R * width };
}
