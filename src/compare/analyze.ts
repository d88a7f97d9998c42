// The comparison: runs the reference and fused paths (and the fp64-class oracle) for one RunSpec and answers where
// the paths part, whether that is more than honest rounding (the noise floor), whether the error is born in a layer
// or carried in (local vs propagated), which fused kernel is to blame (bisection), whether the fused path is
// deterministic, and what it does to generated text. Used by the worker and the CLI alike.
//
// Everything stays on the GPU: both paths, every tap, the oracle (double-float on the GPU, or the CPU fp64 oracle
// uploaded) and all layers' local re-runs are recorded into one submit, the metrics are reduced there, and only
// their summaries are read back (src/compare/gpu-metrics.ts; src/compare/metrics.ts is their test oracle).
import type { GpuBatch } from '../engine/batch';
import type { Engine } from '../engine/engine';
import { FUSED_KERNELS, type FusedKernelId } from '../engine/fused-kernels';
import { readDf } from '../engine/oracle-df';
import { storageUnitRoundoff } from '../numeric/precision';
import { faultHooks, placeFaults } from '../run/faults';
import type { RunSpec } from '../run/runspec';
import { bisect, type DecodePrefix, determinismOf, generate } from './analysis-after';
import {
  type AnalysisContext,
  comparisons,
  type EngineRuns,
  local,
  oracle,
  sources,
  verdict,
} from './analysis-phases';
import { CpuMetrics } from './cpu-metrics';
import type { DecodeChecker } from './decode-run-file';
import { analyzeFamily, checkNeoXFaults } from './family-compare';
import { overallVerdict } from './generation-verdict';
import { GpuMetrics } from './gpu-metrics';
import type { MetricsEngine } from './jobs';
import { metricValue } from './metrics';
import type { OracleInfo } from './oracle-info';
import { isCpuAdapter, type OracleChoice, type OracleTensors, type SelfTestOptions } from './oracle-source';
import type { PartingRows } from './parting';
import type { AnalysisPartial, DeterminismResult, Report } from './report';
import { whyOfPaths } from './why-paths';

export * from './report';
export { metricValue };

export interface AnalyzeOptions {
  /** Progress: phase name and fraction done. */
  onProgress?: (phase: string, done: number, total: number) => void;
  /** Partial results as they exist (the final report is still returned). */
  onPartial?: (p: AnalysisPartial) => void;
  signal?: AbortSignal;
  /** Which oracle: 'auto' (default) lets the engine choose per adapter. */
  oracle?: OracleChoice;
  /** Where the comparisons are reduced: 'auto' (default): on the GPU, but by metrics.ts on a CPU adapter. */
  metrics?: 'auto' | 'gpu' | 'cpu';
  /** Test hook: run the self-test against a deliberately broken double-float library. */
  selfTest?: SelfTestOptions;
  /**
   * Record each path's decode steps and check them op by op as runs of a generation with this checker
   * (decode-runs.ts decodeChecker(engine): the runs analysis), into generation.decode, whatever the text does
   * (the checkbox "check every decode step op by op", `cli compare --check-decode`).
   */
  checkDecode?: DecodeChecker;
  /**
   * The checker the decode check uses when it starts by itself: where the generated texts part (other than on a
   * near tie) or a cached decode leaves its uncached forward (generation-verdict.ts). Without it (and without
   * checkDecode) no decode check runs.
   */
  decodeChecker?: DecodeChecker;
  /** Skip parts (the bench measures the bare compare). */
  skip?: {
    local?: boolean;
    bisection?: boolean;
    determinism?: boolean;
    generation?: boolean;
    taps?: boolean;
    why?: boolean;
  };
}

export class AnalysisCancelled extends Error {
  override name = 'AnalysisCancelled';
}

const metricsOf = new WeakMap<GPUDevice, GpuMetrics>();

/**
 * Where the comparisons are reduced: on the GPU (one GpuMetrics per device; its pipelines are cached), or, on a CPU
 * adapter where the reduction kernels are emulated and reading back is a memory copy, by metrics.ts ('auto').
 */
export function metricsEngine(
  engine: Engine,
  choice: 'auto' | 'gpu' | 'cpu',
): { on: 'gpu' | 'cpu'; m: MetricsEngine } {
  const { device, pipelines } = engine.gpuParts();
  if (choice === 'cpu' || (choice === 'auto' && isCpuAdapter(engine)))
    return { on: 'cpu', m: new CpuMetrics(device) };
  let m = metricsOf.get(device);
  if (!m) metricsOf.set(device, (m = new GpuMetrics(device, pipelines)));
  return { on: 'gpu', m };
}

/**
 * Runs the whole comparison for `spec` on the engine's loaded model, as a pipeline of named phases over runs
 * (analysis-phases.ts): sources → oracle → local → comparisons → verdict, then bisection, determinism, why
 * (why-paths.ts) and generation (analysis-after.ts), each result handed out as soon as it exists.
 */
export async function analyze(
  engine: Engine,
  spec: RunSpec,
  tokens: number[],
  opts: AnalyzeOptions = {},
): Promise<Report> {
  const info = engine.modelInfo;
  if (!info) throw new Error('no model is loaded');
  // A Llama-family model: its own first-form analysis (family-compare.ts); GPT-NeoX refuses the family's faults.
  if (info.family === 'llama') return analyzeFamily(engine, spec, tokens, opts);
  checkNeoXFaults(spec);
  const planted = placeFaults(spec.faults, spec.seed, info.config.numLayers);
  const skip = opts.skip ?? {};
  const { on: metricsOn, m: metrics } = metricsEngine(engine, opts.metrics ?? 'auto');
  const batches: GpuBatch[] = [];
  const c: AnalysisContext = {
    engine,
    spec,
    tokens,
    fusedSet: new Set<FusedKernelId>(spec.fused),
    planted,
    hooks: faultHooks(planted),
    metrics,
    metricsOn,
    taps: skip.taps ? 'dump' : 'all',
    skipLocal: skip.local ?? false,
    checkDecode: opts.checkDecode ?? opts.decodeChecker,
    decodeCheck: opts.checkDecode ? 'asked' : 'auto',
    onProgress: (phase) => opts.onProgress?.(phase, done, phases),
    durations: {},
    newBatch: () => {
      const b = engine.batch();
      batches.push(b);
      return b;
    },
  };
  const phases = 9;
  let done = 0;
  const step = async <R>(name: string, f: () => Promise<R> | R): Promise<R> => {
    if (opts.signal?.aborted) throw new AnalysisCancelled('analysis cancelled');
    opts.onProgress?.(name, done, phases);
    const t0 = performance.now();
    const r = await f();
    c.durations[name] = (c.durations[name] ?? 0) + performance.now() - t0;
    done++;
    return r;
  };
  try {
    // One batch: both paths with every tap, the oracle, every layer's local re-runs and every reduction, handed
    // to the GPU in parts as they are recorded (the GPU works on one part while the CPU records the next).
    const runs = await step('sources', () => sources(c));
    const o = await step('oracle', () => oracle(c, runs, opts.oracle ?? 'auto', opts.selfTest));
    const locals = await step('local', () => local(c, runs, o.tensors));
    // The determinism re-runs need only the fused run's taps: recorded and submitted as soon as the comparisons
    // are, so their recording overlaps the GPU's work (their result is awaited in their own step, below).
    let determinismRun: Promise<DeterminismResult> | null = null;
    const startDeterminism = () => {
      if (skip.determinism) return;
      determinismRun = determinismOf(c, runs);
      determinismRun.catch(() => null); // awaited below; this keeps an early failure from going unhandled
    };
    const measured = await step('comparisons', () =>
      comparisons(c, runs, o.tensors, locals, startDeterminism),
    );
    let report = await step('verdict', () => verdict(c, runs, measured, o.info));
    opts.onPartial?.({ kind: 'analysis', report });
    const bisection = await step('bisection', () =>
      report.verdict === 'agree' || skip.bisection ? null : bisect(c, runs, report, measured),
    );
    if (bisection) opts.onPartial?.({ kind: 'bisection', bisection });
    const determinism = await step('determinism', () =>
      skip.determinism
        ? { identical: true, differences: [], runs: [] }
        : (determinismRun ?? determinismOf(c, runs)),
    );
    opts.onPartial?.({ kind: 'determinism', determinism });
    report = { ...report, bisection, determinism };
    const why = await step('why', () => (skip.why ? null : whyOfPaths(c, runs, report, determinism, o.info)));
    report = { ...report, why };
    if (why) opts.onPartial?.({ kind: 'why', why });
    const generation = await step('generation', () =>
      spec.generate === 0 || skip.generation
        ? null
        : generate(
            c,
            opts.onPartial,
            opts.signal,
            o.info,
            promptRows(c, runs, o.tensors),
            decodePrefix(c, o),
            logitsFloor(report),
            report.verdict === 'agree',
          ),
    );
    // The verdict covers the text: a prompt that agrees over a generation that does not is not AGREE.
    const prompt = report.verdict === 'diverged' ? 'diverged' : 'agree';
    return { ...report, verdict: overallVerdict(prompt, generation), generation, durations: c.durations };
  } finally {
    for (const b of batches) b.release();
  }
}

/**
 * The exact forward over the prompt as the decode check's start (its rows before the decode): each layer's QKV
 * projection, where the oracle ran on the GPU with every tap (its buffers live as long as the analysis's batches).
 */
function decodePrefix(
  c: AnalysisContext,
  o: { info: OracleInfo; tensors: OracleTensors },
): DecodePrefix | null {
  const { taps } = o.tensors;
  if (o.info.kind !== 'gpu' || !taps.has('layers.0.qkv')) return null;
  return { from: c.tokens.length, qkv: (i) => taps.get(`layers.${i}.qkv`)! };
}

/**
 * The logits' floor as a relative L2 (the cached decode's check against its uncached forward): the reference's
 * prompt logits against exact, never below one unit roundoff of the storage precision.
 */
function logitsFloor(report: Report): number {
  const f = report.logits.floor.relL2;
  const u = storageUnitRoundoff(report.spec.precision);
  return Number.isFinite(f) ? Math.max(f, u) : u;
}

/** The prompt's last logits row of each path and of the oracle, read from the first batch (parting.ts). */
function promptRows(c: AnalysisContext, runs: EngineRuns, o: OracleTensors): PartingRows {
  const T = c.tokens.length;
  const V = c.engine.modelInfo!.config.vocabSize;
  const last = async (run: EngineRuns['ref']) =>
    (await runs.batch.read(run.taps.get('logits')!, T)).subarray((T - 1) * V);
  return {
    ref: () => last(runs.ref),
    fused: () => last(runs.fused),
    exact: async () => (await readDf(runs.batch.device, o.taps.get('logits')!, T)).subarray((T - 1) * V),
  };
}

export { FUSED_KERNELS };
