// What the first runs analysis of a process pays and the next do not, paid once when the model is loaded: the
// double-float self-test (once per device: oracle-source.ts), the compile of every pipeline the analysis and its why
// run (the reference forward with every tap, the exact forward, each op re-run from recorded inputs, the metric
// reductions, the why's products), and the first calls of its JavaScript (the analysis's recording, the cause search,
// the anatomy), which run slowly until the engine has compiled them. The warm-up is one whole analysis of two runs made
// here: the reference path's own taps as run A, and as run B the same with one op's output rounded to bf16 (a born
// op, so that its why runs too), on as many tokens as a run usually has (tiles are chosen by shape: a pipeline for
// 128 rows is not one for 4). Its report is dropped. `signal` stops it between its steps (the page's worker yields it
// to any job that arrives: src/worker/runs.ts), its buffers given back.
import type { Engine } from '../engine/engine';
import type { RunFile, RunTensor } from '../model/run-file';
import { roundTo } from '../numeric/round';
import { neoxSlotOfTap } from '../ops/families';
import { AnalysisCancelled } from './analyze';
import { analyzeRuns } from './analyze-runs';
import { startRunsAnalysis } from './runs-start';

/** Where the warm-up's time went (ms): its first steps, the analysis and its why; the tokens it ran on. */
export interface RunsWarmup {
  tokens: number;
  ms: number;
  durations: Record<string, number>;
  /** The warm-up report's one line (run B born at the rounded op, its cause named: the why ran). */
  sentence: string;
}

/** One runs analysis of the loaded model's own reference taps (T tokens, capped by the model's positions). */
export async function warmRunsAnalysis(engine: Engine, T = 128, signal?: AbortSignal): Promise<RunsWarmup> {
  const t0 = performance.now();
  const stopped = () => {
    if (signal?.aborted) throw new AnalysisCancelled('warm-up stopped');
  };
  stopped();
  const cfg = engine.modelInfo!.config;
  const n = Math.max(2, Math.min(T, cfg.maxPositionEmbeddings));
  const tokens = Array.from({ length: n }, (_, i) => (i * 7919 + 104729) % cfg.vocabSize);
  const start = startRunsAnalysis(engine, tokens);
  const s = await start;
  const slots = new Map<string, RunTensor>();
  let bytes = 0;
  try {
    await s.refDone;
    for (const [name, tap] of s.ref.taps) {
      stopped();
      const data = await s.refBatch.read(tap, n);
      slots.set(neoxSlotOfTap(name), { name, dtype: 'F32', data });
      bytes += data.byteLength;
    }
    stopped();
  } catch (e) {
    s.release();
    throw e;
  }
  const file = (label: string, tensors: Map<string, RunTensor>): RunFile => ({
    file: label,
    tokens,
    label,
    device: null,
    dtype: 'float32',
    slots: tensors,
    ignored: [],
    handoffs: [],
    storage: 'F32',
    bytes,
    generation: null,
  });
  // Run B: the last layer's dense_h_to_4h output (the largest product) rounded to bf16.
  const born = `layers.${cfg.numLayers - 1}.fc1`;
  const b = new Map(slots);
  const at = slots.get(born);
  if (at) b.set(born, { ...at, data: Float32Array.from(at.data, (x) => roundTo('bf16', x)) });
  const report = await analyzeRuns(
    engine,
    { file: file('warm-up A', slots), sha256: null },
    { file: file('warm-up B', b), sha256: null },
    { signal },
    start,
  );
  return { tokens: n, ms: performance.now() - t0, durations: report.durations, sentence: report.sentence };
}
