// Our own decode steps recorded as a run (docs/RUNS.md, "Runs of a generation"): while a DecodeSession generates,
// every op's output row of the prefill and of each decode step is copied into one buffer per tap, at its position,
// so that after the generation each tap holds [positions, width] — the same layout as a run dumped from Hugging
// Face's generate, checked by the same analysis (src/compare/analyze-runs.ts). The prefill's copies follow each op
// straight into rows 0..T−1; a step's program is recorded once and replayed at every position, so its copies go to
// a one-row staging buffer per tap, moved to the step's row after the step (decode.ts calls afterStep).
import type { BufferPool } from '../gpu/pool';
import type { Program } from '../gpu/program';
import { recordReadbackPacked } from '../gpu/readback';
import { neoxTapHasSlot } from '../ops/families';
import type { Plan } from './plan';

/**
 * A path's recorded decode, kept on the GPU (the caller's to release): each tap's rows 0..rows−1 as [rows, width]
 * f32, by engine tap name. The runs analysis reads them where they are (no round trip through the CPU); read()
 * brings rows to the CPU for what needs them there (the CPU oracle, the why, a test).
 */
export interface RecordedDecode {
  rows: number;
  taps: Map<string, { buffer: GPUBuffer; width: number }>;
  /** Every tap's rows from..rows−1 (all by default), by engine tap name; `names` limits the taps. */
  read(from?: number, names?: readonly string[]): Promise<Map<string, Float32Array>>;
  release(): void;
}

/** The largest staging buffer a read packs taps into (well under any adapter's maxBufferSize). */
const READ_PACK = 64 << 20;

/**
 * Consecutive runs [i, j) of `sizes` whose sums stay within `cap` (a size past the cap alone), in order, covering all.
 */
export function packs(sizes: readonly number[], cap: number): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < sizes.length; ) {
    let j = i + 1;
    let sum = sizes[i];
    while (j < sizes.length && sum + sizes[j] <= cap) sum += sizes[j++];
    out.push([i, j]);
    i = j;
  }
  return out;
}

const usage = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

interface Tap {
  width: number;
  /** [rows, width]: every position's row. */
  all: GPUBuffer;
  /** [width]: the replayed step's row, moved into `all` after each step. */
  stage: GPUBuffer | null;
}

export class DecodeRecorder {
  private readonly taps = new Map<string, Tap>();

  constructor(
    private readonly device: GPUDevice,
    private readonly pool: BufferPool,
    private readonly rows: number,
  ) {}

  /** Adds the copies of a recorded plan of T rows: the prefill (rows 0..T−1) or the step (T = 1, staged). */
  attach(program: Program, plan: Plan, step: boolean): void {
    const T = plan.T;
    for (const op of plan.ops) {
      for (const w of op.writes) {
        if (!neoxTapHasSlot(w.name)) continue; // the taps a run file has slots for
        const width = w.floats / T;
        let tap = this.taps.get(w.name);
        if (!tap) {
          const all = this.pool.acquire(this.rows * width * 4, usage(), `record:${w.name}`);
          this.taps.set(w.name, (tap = { width, all, stage: null }));
        }
        if (step) tap.stage ??= this.pool.acquire(width * 4, usage(), `record-step:${w.name}`);
        const dst = step ? tap.stage! : tap.all;
        const parts = w.parts ?? [{ buffer: w.buffer, col0: 0, cols: width }];
        for (let r = 0; r < T; r++) {
          for (const p of parts) {
            if (!w.parts && r > 0) break; // unsplit: one copy of all T rows
            program.copyAfter({
              after: op.spec.label,
              src: p.buffer,
              srcOffset: w.parts ? r * p.cols * 4 : 0,
              dst,
              dstOffset: w.parts ? (r * width + p.col0) * 4 : 0,
              bytes: w.parts ? p.cols * 4 : T * width * 4,
            });
          }
        }
      }
    }
  }

  /** After a replayed step at `position`: its staged rows into their place. */
  afterStep(encoder: GPUCommandEncoder, position: number): void {
    for (const t of this.taps.values()) {
      if (t.stage) encoder.copyBufferToBuffer(t.stage, 0, t.all, position * t.width * 4, t.width * 4);
    }
  }

  /**
   * Every tap's first `rows` rows copied out of the session (whose buffers the next generation overwrites) into
   * buffers of the caller's, after the steps already submitted.
   */
  take(rows: number): RecordedDecode {
    const device = this.device;
    const taps = new Map<string, { buffer: GPUBuffer; width: number }>();
    const encoder = device.createCommandEncoder({ label: 'record:take' });
    try {
      for (const [name, t] of this.taps) {
        const bytes = rows * t.width * 4;
        const buffer = device.createBuffer({
          size: Math.max(4, bytes),
          usage: usage(),
          label: `decode:${name}`,
        });
        taps.set(name, { buffer, width: t.width });
        encoder.copyBufferToBuffer(t.all, 0, buffer, 0, bytes);
      }
      device.queue.submit([encoder.finish()]);
    } catch (e) {
      for (const t of taps.values()) t.buffer.destroy();
      throw e;
    }
    return recordedDecode(device, rows, taps);
  }
}

function recordedDecode(
  device: GPUDevice,
  rows: number,
  taps: Map<string, { buffer: GPUBuffer; width: number }>,
): RecordedDecode {
  let released = false;
  return {
    rows,
    taps,
    async read(from = 0, names?: readonly string[]) {
      if (released) throw new Error('decode: the recorded taps were released');
      if (!Number.isInteger(from) || from < 0 || from > rows)
        throw new Error(`decode: no row ${from} of ${rows}`);
      const which = [...taps].filter(([name]) => !names || names.includes(name));
      const requests = which.map(([, t]) => ({
        src: t.buffer,
        offset: from * t.width * 4,
        bytes: (rows - from) * t.width * 4,
      }));
      // Packed into staging buffers of at most READ_PACK bytes each (one map apiece; a tap alone where it is larger).
      const encoder = device.createCommandEncoder({ label: 'record:read' });
      const finishes = packs(
        requests.map((r) => r.bytes),
        READ_PACK,
      ).map(([i, j]) => recordReadbackPacked(device, encoder, requests.slice(i, j)));
      device.queue.submit([encoder.finish()]);
      const got = (await Promise.all(finishes.map((f) => f()))).flat();
      return new Map(which.map(([name], i) => [name, got[i]]));
    },
    release() {
      released = true;
      for (const t of taps.values()) t.buffer.destroy();
    },
  };
}
