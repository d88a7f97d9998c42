// The runs analysis's tensors on the GPU, for the rows it checks (analyze-runs.ts): a run file's slots uploaded as
// the checked rows only, plus every row of the slots an op reads whole (attention's keys and values, the whole
// layer); the checked rows of a tensor already on the GPU (the engine's taps, the oracle's forward) copied out.
// Rows are the leading axis of every tensor ([T, width] row-major, and each column piece of a split one
// [T, cols]), so the rows from..T−1 are one contiguous range of each buffer.
import type { GpuBatch, GpuTap } from '../engine/batch';
import type { DfBuffer } from '../engine/oracle-df';
import { DF_BYTES } from '../engine/oracle-df';
import type { RunFile } from '../model/run-file';

/** A run's slots on the GPU: the checked rows of each ([T − from, width]), and every row of those in `full`. */
export interface UploadedRun {
  rows: Map<string, GpuTap>;
  full: Map<string, GpuTap>;
}

/**
 * Sources: each file's slots uploaded, rows from..T−1 (a tensor split like the oracle's logits is uploaded in the
 * same pieces); the slots named in `whole` also with every row. A slot in `resident` (every row of it already on
 * the GPU: our own recorded decode) is copied there instead, and its file data is not read.
 */
export function uploadRun(
  batch: GpuBatch,
  run: RunFile,
  logitsParts: DfBuffer['parts'],
  from: number,
  whole: ReadonlySet<string>,
  resident?: ReadonlyMap<string, GpuTap>,
): UploadedRun {
  const T = run.tokens.length;
  const split = logitsParts && logitsParts.length > 1 ? logitsParts : null;
  const put = (label: string, data: Float32Array) => {
    const b = batch.buffer(data.byteLength, label);
    batch.device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
    return b;
  };
  const upload = (slot: string, name: string, data: Float32Array, r0: number): GpuTap => {
    const R = T - r0;
    const width = data.length / T;
    const tag = r0 === 0 ? '' : `[${r0}:]`;
    if (slot === 'logits' && split) {
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
  const copy = (slot: string, tap: GpuTap, r0: number): GpuTap => {
    if (slot === 'logits' && split) return splitRows(batch, tap, T, r0, split);
    return r0 === 0 ? tap : tapRows(batch, tap, T, r0);
  };
  const rows = new Map<string, GpuTap>();
  const full = new Map<string, GpuTap>();
  for (const [slot, t] of run.slots) {
    const onGpu = resident?.get(slot);
    const get = (r0: number) => (onGpu ? copy(slot, onGpu, r0) : upload(slot, t.name, t.data, r0));
    const all = from === 0 || whole.has(slot) ? get(0) : null;
    if (all) full.set(slot, all);
    rows.set(slot, from === 0 ? all! : get(from));
  }
  return { rows, full };
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
