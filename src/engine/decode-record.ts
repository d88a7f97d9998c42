// Our own decode steps recorded as a run (docs/RUNS.md, "Runs of a generation"): while a DecodeSession generates,
// every op's output row of the prefill and of each decode step is copied into one buffer per tap, at its position,
// so that after the generation each tap holds [positions, width] — the same layout as a run dumped from Hugging
// Face's generate, checked by the same analysis (src/compare/analyze-runs.ts). The prefill's copies follow each op
// straight into rows 0..T−1; a step's program is recorded once and replayed at every position, so its copies go to
// a one-row staging buffer per tap, moved to the step's row after the step (decode.ts calls afterStep).
import type { BufferPool } from '../gpu/pool';
import type { Program } from '../gpu/program';
import { readBuffer } from '../gpu/readback';
import type { Plan } from './plan';

/** The engine taps a run file has slots for (resid_mid is the run's ln2_in). */
const RECORDED =
  /^(embed|final_norm|logits|layers\.\d+\.(ln1|qkv|ctx|attn_out|resid_mid|ln2|fc1|gelu|mlp_out|out))$/;

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
        if (!RECORDED.test(w.name)) continue;
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

  /** Every tap's first `rows` rows, by engine tap name. */
  async read(rows: number): Promise<Map<string, Float32Array>> {
    const out = new Map<string, Float32Array>();
    for (const [name, t] of this.taps)
      out.set(name, await readBuffer(this.device, t.all, rows * t.width * 4));
    return out;
  }
}
