// The runs analysis's first steps, which need the tokens but none of the runs' tensors (analyze-runs.ts): which
// oracle runs, the reference path's forward with every tap (the floors' run) and, on the GPU oracle, the exact
// forward — recorded and handed to the GPU at once. A reader that learns the tokens from a run file's header
// (ReadRunOptions.onHeader, streamRuns) starts them there, so that the GPU works while the tensors are still being
// read.
import type { BatchForward, GpuBatch } from '../engine/batch';
import type { Engine } from '../engine/engine';
import type { DfBuffer } from '../engine/oracle-df';
import { GpuOracle } from '../engine/oracle-gpu';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import { decideOracle } from './oracle-source';
import { dfRows } from './run-sources';
import type { AnalyzeRunsOptions } from './runs-input';

/** The angles of runs made elsewhere: Hugging Face's (kernels/cpu/rotary-angles.ts). */
export const HF_ANGLES: RotaryAngles = 'hf-fp32';

/** What the first steps leave for the analysis; release() returns their buffers (the analysis does, at its end). */
export interface RunsStart {
  tokens: readonly number[];
  from: number;
  angles: RotaryAngles;
  oracleInfo: Awaited<ReturnType<typeof decideOracle>>;
  gpuOracle: GpuOracle | null;
  /** The floors' run's forward, submitted on its own (refDone) before anything else. */
  refBatch: GpuBatch;
  ref: BatchForward;
  refDone: Promise<void>;
  /** The analysis's own batch, its first part (the exact forward) already handed to the GPU. */
  batch: GpuBatch;
  /** The exact forward's taps on the checked rows (GPU oracle); null where the CPU oracle computes it later. */
  forward: Map<string, DfBuffer> | null;
  /** Milliseconds these steps took (to their submit). */
  ms: number;
  release(): void;
}

/** The first steps of a runs analysis of `tokens` with these options (the same ones analyzeRuns is given). */
export async function startRunsAnalysis(
  engine: Engine,
  tokens: readonly number[],
  opts: Pick<AnalyzeRunsOptions, 'oracle' | 'rows' | 'angles' | 'prefix'> = {},
): Promise<RunsStart> {
  const t0 = performance.now();
  if (!engine.modelInfo || !engine.gpuParts().model) throw new Error('no model is loaded');
  const T = tokens.length;
  const from = opts.rows?.from ?? 0;
  if (!Number.isInteger(from) || from < 0 || from >= T)
    throw new Error(`rows from ${from}: not a row of the ${T} tokens`);
  const angles = opts.angles ?? HF_ANGLES;
  const oracleInfo = await decideOracle(engine, opts.oracle ?? 'auto');
  const { device, pipelines, pool, model } = engine.gpuParts();
  const gpuOracle =
    oracleInfo.kind === 'gpu'
      ? new GpuOracle(device, pipelines, pool, model, {
          dfFma: oracleInfo.dfFma,
          maxBindingBytes: engine.maxBindingBytes,
          angles,
        })
      : null;
  const ids = [...tokens];
  const refBatch = engine.batch();
  const batch = engine.batch();
  const release = () => {
    batch.release();
    refBatch.release();
  };
  try {
    // The reference path first, in a submit of its own: on the CPU oracle's route its taps are read back.
    const ref = refBatch.forward(ids, { path: 'reference', precision: 'fp32', taps: 'all' });
    // The CPU records the rest while the GPU runs it (the queue keeps the order).
    const refDone = refBatch.submit();
    refDone.catch(() => undefined); // awaited by the analysis; an error then, not an unhandled rejection now
    let forward: Map<string, DfBuffer> | null = null;
    if (gpuOracle) {
      const prefix = opts.prefix && from > 0 && opts.prefix.from === from ? opts.prefix : null;
      if (prefix) {
        // The checked rows only, on the earlier rows' keys and values.
        const run = gpuOracle.forwardFrom(batch.encoder, ids, from, prefix.qkv);
        batch.onRelease(() => run.release());
        forward = run.taps;
      } else {
        const run = gpuOracle.forward(batch.encoder, ids, 'dump');
        batch.onRelease(() => run.release());
        // Every position's forward (attention reads them all); its checked rows compared.
        forward = new Map([...run.taps].map(([name, t]) => [name, dfRows(batch, t, T, from, name)]));
      }
      batch.flush(); // the GPU starts on the exact forward while the CPU goes on
    }
    return {
      tokens: ids,
      from,
      angles,
      oracleInfo,
      gpuOracle,
      refBatch,
      ref,
      refDone,
      batch,
      forward,
      ms: performance.now() - t0,
      release,
    };
  } catch (e) {
    release();
    throw e;
  }
}

/** Whether a start is of these tokens, rows and angles (one made from a run file's header always is). */
export function startFits(
  s: RunsStart,
  tokens: readonly number[],
  from: number,
  angles: RotaryAngles,
): boolean {
  return (
    s.from === from &&
    s.angles === angles &&
    s.tokens.length === tokens.length &&
    s.tokens.every((t, i) => t === tokens[i])
  );
}
