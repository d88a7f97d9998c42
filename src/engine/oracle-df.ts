// The GPU oracle's tensors: df buffers (`array<vec2<f32>>`, x = hi, y = lo, row-major; split by columns where one
// binding cannot hold them), the recording of one oracle run (its pooled buffers, uploads and dispatches, released
// together), and uploading and reading df tensors.
import type { PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import { Program } from '../gpu/program';
import { recordReadback, uploadBuffer } from '../gpu/readback';
import { fromDfPairs, toDfPairs } from '../numeric/double-float';

/** n elements of vec2<f32> (hi, lo); `parts` when split by columns (the logits of a large vocabulary), each
 * [rows, cols] in its own buffer, columns col0.. of the whole. */
export interface DfBuffer {
  buffer: GPUBuffer;
  n: number;
  parts?: { buffer: GPUBuffer; col0: number; cols: number }[];
}

/** The taps of one recorded oracle run. Release only after the encoder's work has been submitted and read. */
export interface OracleRun {
  taps: Map<string, DfBuffer>;
  /** The compute dispatches recorded (the oracle's cost in launches; a bench line and a test count them). */
  dispatches: number;
  release(): void;
}

export type OracleTaps = 'dump' | 'all';

export class OracleError extends Error {
  override name = 'OracleError';
}

export const DF_BYTES = 8;

/** Buffers, uploads and dispatches of one run, recorded once into an encoder and released together. */
export class Recording {
  readonly program: Program;
  readonly taps = new Map<string, DfBuffer>();
  private pooled: GPUBuffer[] = [];
  private uploads: GPUBuffer[] = [];

  constructor(
    private readonly device: GPUDevice,
    pipelines: PipelineCache,
    private readonly pool: BufferPool,
    private readonly maxBinding: number,
  ) {
    this.program = new Program(device, pipelines);
  }

  /** A df buffer of n elements from the pool (refused, with the tensor's name, beyond one storage binding). */
  df(n: number, label: string): GPUBuffer {
    const bytes = n * DF_BYTES;
    if (bytes > this.maxBinding) {
      throw new OracleError(
        `oracle ${label} needs ${bytes} bytes, more than one storage binding on this adapter (${this.maxBinding}): use a shorter prompt`,
      );
    }
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const b = this.pool.acquire(bytes, usage, `oracle:${label}`);
    this.pooled.push(b);
    return b;
  }

  upload(data: Float32Array | Uint32Array, label: string): GPUBuffer {
    const b = uploadBuffer(this.device, data, `oracle:${label}`);
    this.uploads.push(b);
    return b;
  }

  release(): void {
    this.program.dispose();
    for (const b of this.pooled) this.pool.release(b);
    for (const b of this.uploads) b.destroy();
    this.pooled = [];
    this.uploads = [];
  }

  run(): OracleRun {
    return { taps: this.taps, dispatches: this.program.dispatchCount, release: () => this.release() };
  }
}

/** A storage buffer holding `data` as df pairs (hi = fround(v), lo = fround(v − hi)). */
export function uploadDf(device: GPUDevice, data: Float64Array): GPUBuffer {
  return uploadBuffer(device, toDfPairs(data), 'df');
}

/**
 * Reads a df tensor back as hi + lo in f64 (one submit). A tensor split by columns is reassembled into
 * [rows, Σ cols]; `rows` (the tensor's row count) is then n / Σ cols unless given, and checked when given.
 */
export async function readDf(device: GPUDevice, t: DfBuffer, rows?: number): Promise<Float64Array> {
  const encoder = device.createCommandEncoder({ label: 'readDf' });
  if (!t.parts) {
    if (rows !== undefined && (!Number.isInteger(rows) || rows < 1 || t.n % rows !== 0))
      throw new OracleError(`readDf: ${t.n} elements are not ${rows} whole rows`);
    const finish = recordReadback(device, encoder, [{ src: t.buffer, bytes: t.n * DF_BYTES }]);
    device.queue.submit([encoder.finish()]);
    const [pairs] = await finish();
    return fromDfPairs(pairs, t.n);
  }
  const cols = t.parts.reduce((s, p) => s + p.cols, 0);
  const R = rows ?? t.n / cols;
  if (!Number.isInteger(R) || R * cols !== t.n)
    throw new OracleError(`readDf: ${t.n} elements do not make ${rows ?? 'whole'} rows of ${cols} columns`);
  const finish = recordReadback(
    device,
    encoder,
    t.parts.map((p) => ({ src: p.buffer, bytes: R * p.cols * DF_BYTES })),
  );
  device.queue.submit([encoder.finish()]);
  const got = await finish();
  const out = new Float64Array(t.n);
  t.parts.forEach((p, k) => {
    const vals = fromDfPairs(got[k], R * p.cols);
    for (let r = 0; r < R; r++) out.set(vals.subarray(r * p.cols, (r + 1) * p.cols), r * cols + p.col0);
  });
  return out;
}
