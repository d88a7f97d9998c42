// The comparison: runs the reference and fused paths (and the fp64-class oracle) for one RunSpec and answers where
// the paths part, whether that is more than honest rounding (the noise floor), whether the error is born in a layer
// or carried in (local vs propagated), which fused kernel is to blame (bisection), whether the fused path is
// deterministic, and what it does to generated text. Used by the worker and the CLI alike.
//
// Everything stays on the GPU: both paths, every tap, the oracle (double-float on the GPU, or the CPU fp64 oracle
// uploaded) and all layers' local re-runs are recorded into one submit, the metrics are reduced there, and only
// their summaries are read back (src/compare/gpu-metrics.ts; src/compare/metrics.ts is their test oracle).
import type { BatchForward, GpuBatch } from '../engine/batch';
import type { Engine } from '../engine/engine';
import { FUSED_KERNELS, type FusedKernelId } from '../engine/fused-kernels';
import type { PlanHooks } from '../engine/plan';
import { summarizeTimings } from '../engine/timing';
import { faultHooks, faultInfo, type PlantedFault, placeFaults } from '../run/faults';
import type { RunSpec } from '../run/runspec';
import { CpuMetrics } from './cpu-metrics';
import { effectiveFloor, needsScale, nonFiniteIn, ratioOf } from './floor';
import type { CompareOut } from './gpu-metrics';
import { GpuMetrics } from './gpu-metrics';
import { JobList, type MetricsEngine, type Side } from './jobs';
import { type FullMetrics, metricValue } from './metrics';
import {
  decideOracle,
  isCpuAdapter,
  type OracleChoice,
  oracleTensors,
  type SelfTestOptions,
} from './oracle-source';
import type {
  BisectionRow,
  DeterminismResult,
  GenerationResult,
  LayerResult,
  Report,
  TapResult,
} from './report';
import { REPORT_SCHEMA } from './report';

export * from './report';
export { metricValue };

/** Results as they exist: the analysis first, then bisection and determinism, then each generated token. */
export type AnalysisPartial =
  | { kind: 'analysis'; report: Report }
  | { kind: 'bisection'; bisection: Report['bisection'] }
  | { kind: 'determinism'; determinism: Report['determinism'] }
  | { kind: 'token'; path: 'reference' | 'fused'; ids: number[]; text: string | null; total: number };

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
  /** Skip parts (the bench measures the bare compare). */
  skip?: {
    local?: boolean;
    bisection?: boolean;
    determinism?: boolean;
    generation?: boolean;
    taps?: boolean;
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

const dumpName = (i: number) => (i < 0 ? 'embed' : `layers.${i}.out`);

/** Runs the whole comparison for `spec` on the engine's loaded model. */
export async function analyze(
  engine: Engine,
  spec: RunSpec,
  tokens: number[],
  opts: AnalyzeOptions = {},
): Promise<Report> {
  const info = engine.modelInfo;
  if (!info || !engine.weights) throw new Error('no model is loaded');
  const cfg = info.config;
  const L = cfg.numLayers;
  const T = tokens.length;
  const { precision, metric, k } = spec;
  const fusedSet = new Set<FusedKernelId>(spec.fused);
  const planted = placeFaults(spec.faults, spec.seed, L);
  const hooks = faultHooks(planted);
  const durations: Record<string, number> = {};
  const skip = opts.skip ?? {};
  const { on: metricsOn, m: metrics } = metricsEngine(engine, opts.metrics ?? 'auto');
  const phases = 9;
  let phase = 0;
  const step = async <R>(name: string, f: () => Promise<R> | R): Promise<R> => {
    if (opts.signal?.aborted) throw new AnalysisCancelled('analysis cancelled');
    opts.onProgress?.(name, phase, phases);
    const t0 = performance.now();
    const r = await f();
    durations[name] = (durations[name] ?? 0) + performance.now() - t0;
    phase++;
    return r;
  };
  const taps = skip.taps ? ('dump' as const) : ('all' as const);
  const scaled = needsScale(metric);
  const batches: GpuBatch[] = [];
  const newBatch = () => {
    const b = engine.batch();
    batches.push(b);
    return b;
  };

  try {
    // 1. One submit: both paths with every tap (timed per op), the oracle, every layer's local re-runs, and the
    // reductions of every comparison. Only the summaries come back.
    const a = newBatch();
    const ref = await step('reference', () =>
      a.forward(tokens, { path: 'reference', precision, taps, timing: true }),
    );
    const fused = await step('fused', () =>
      a.forward(tokens, { path: fusedSet, precision, hooks, taps, timing: true }),
    );
    const localLayers = skip.local ? [] : Array.from({ length: L }, (_, i) => i);
    const oracleInfo = await decideOracle(engine, opts.oracle ?? 'auto', opts.selfTest);
    const oracle = await step('oracle', () => oracleTensors(engine, a, oracleInfo, tokens, localLayers));
    const localRuns = await step('local', () =>
      localLayers.map((i) => ({
        fused: a.forward(tokens, {
          path: fusedSet,
          precision,
          hooks,
          taps: 'dump',
          layers: { from: i, to: i + 1, input: ref.taps.get(dumpName(i - 1))!.buffer },
        }),
        ref: a.forward(tokens, {
          path: 'reference',
          precision,
          taps: 'dump',
          layers: { from: i, to: i + 1, input: oracle.local(i).input },
        }),
      })),
    );
    const zero = scaled ? a.buffer(T * Math.max(cfg.hiddenSize, cfg.vocabSize) * 4, 'zero') : null;
    const jobs = new JobList(T, precision);
    const f32 = (run: BatchForward, name: string): Side => ({ f32: run.taps.get(name)! });
    const df = (name: string): Side => ({ df: oracle.taps.get(name)! });
    const z = (n: number): Side => ({ zero: zero!, floats: n });
    const perLayer = Array.from({ length: L }, (_, i) => {
      const o = dumpName(i);
      return {
        floor: jobs.compare(f32(ref, o), df(o), `${o} floor`),
        propagated: jobs.compare(f32(fused, o), f32(ref, o), `${o} propagated`, { perRow: true }),
        fusedVsOracle: jobs.compare(f32(fused, o), df(o), `${o} fused vs oracle`),
        local: skip.local
          ? jobs.compare(f32(fused, o), f32(ref, o), `${o} local`)
          : jobs.compare(f32(localRuns[i].fused, o), f32(ref, o), `${o} local`),
        localFloor: skip.local
          ? jobs.compare(f32(ref, o), df(o), `${o} local floor`)
          : jobs.compare(f32(localRuns[i].ref, o), { df: oracle.local(i).exact }, `${o} local floor`),
        scale: scaled ? jobs.compare(f32(ref, o), z(T * cfg.hiddenSize), `${o} scale`) : -1,
      };
    });
    const logitsJobs = {
      floor: jobs.compare(f32(ref, 'logits'), df('logits'), 'logits floor'),
      propagated: jobs.compare(f32(fused, 'logits'), f32(ref, 'logits'), 'logits propagated'),
      scale: scaled ? jobs.compare(f32(ref, 'logits'), z(T * cfg.vocabSize), 'logits scale') : -1,
    };
    const tapJobs = skip.taps
      ? []
      : [...ref.taps.keys()].map((name) => {
          const m = /^layers\.(\d+)\.(.+)$/.exec(name);
          const compared = fused.taps.has(name);
          return {
            name,
            layer: m ? Number(m[1]) : null,
            op: m ? m[2] : name,
            compared,
            shape: ref.taps.get(name)!.floats,
            vsReference: compared
              ? jobs.compare(f32(fused, name), f32(ref, name), `${name} vs reference`, { histogram: true })
              : -1,
            refVsOracle: oracle.taps.has(name)
              ? jobs.compare(f32(ref, name), df(name), `${name} vs oracle`)
              : -1,
          };
        });
    const pending = jobs.record(metrics, a.encoder);
    a.onRelease(() => pending.release());
    await step('gpu', () => a.submit());
    const { compare: out } = await step('readback', () => pending.read());
    const got = (j: number): FullMetrics => out[j].metrics;
    const scaleOf = (j: number) => (j < 0 ? 0 : got(j).maxAbs);

    const layers: LayerResult[] = perLayer.map((j, i) => {
      const floor = got(j.floor);
      const propagated = got(j.propagated);
      const local = got(j.local);
      const localFloor = got(j.localFloor);
      const scale = scaleOf(j.scale);
      const ratio = ratioOf(propagated, floor, metric, precision, scale);
      const localRatio = ratioOf(local, localFloor, metric, precision, scale);
      const floorValue = effectiveFloor(floor, metric, precision, scale);
      return {
        layer: i,
        floorValue,
        threshold: k * floorValue,
        floor,
        propagated,
        fusedVsOracle: got(j.fusedVsOracle),
        local,
        localFloor,
        ratio,
        localRatio,
        // NaN/Inf in either path is a finding, never agreement (equal NaNs give relL2 0 vs floor 0).
        diverged: ratio > k || nonFiniteIn(propagated) > 0,
        born: localRatio > k || nonFiniteIn(local) > 0,
        perToken: Array.from(out[j.propagated].perRow ?? []),
      };
    });
    const firstDivergentLayer = layers.find((l) => l.diverged)?.layer ?? null;
    const firstBornLayer = layers.find((l) => l.born)?.layer ?? null;
    const logitsFloor = got(logitsJobs.floor);
    const logitsProp = got(logitsJobs.propagated);
    const logitsDiverged =
      ratioOf(logitsProp, logitsFloor, metric, precision, scaleOf(logitsJobs.scale)) > k ||
      nonFiniteIn(logitsProp) > 0;
    const verdict = firstDivergentLayer !== null || logitsDiverged ? 'diverged' : 'agree';
    const tapResults: TapResult[] = tapJobs.map((t) => ({
      name: t.name,
      layer: t.layer,
      op: t.op,
      status: t.compared ? 'compared' : 'fused-away',
      shape: t.shape,
      vsReference: t.vsReference < 0 ? null : got(t.vsReference),
      refVsOracle: t.refVsOracle < 0 ? null : got(t.refVsOracle),
      histogram: t.vsReference < 0 ? null : (out[t.vsReference] as CompareOut).histogram,
    }));
    const refTiming = ref.timings ? summarizeTimings(ref.timings, L) : null;
    const fusedTiming = fused.timings ? summarizeTimings(fused.timings, L) : null;
    let report: Report = {
      schema: REPORT_SCHEMA,
      createdAt: new Date().toISOString(),
      spec,
      model: { name: info.name, config: cfg },
      adapter: engine.adapter,
      tokens,
      plantedFaults: planted,
      metric,
      k,
      layers,
      firstDivergentLayer,
      firstBornLayer,
      verdict,
      logits: { propagated: logitsProp, floor: logitsFloor },
      taps: tapResults,
      bisection: null,
      determinism: { identical: true, differences: [], runs: [] },
      generation: null,
      timing: {
        reference: refTiming,
        fused: fusedTiming,
        speedup:
          refTiming && fusedTiming && fusedTiming.totalNs > 0
            ? refTiming.totalNs / fusedTiming.totalNs
            : null,
      },
      oracle: { kind: oracleInfo.kind, reason: oracleInfo.reason, selfTest: oracleInfo.selfTest },
      metricsOn,
      durations,
    };
    opts.onPartial?.({ kind: 'analysis', report });

    // 2. Bisection: each enabled fused kernel alone (with the faults it carries), all in one submit.
    const bisection = await step('bisection', async () => {
      if (verdict === 'agree' || skip.bisection) return null;
      const b = newBatch();
      const runs = spec.fused.map((kernel) => ({
        kernel,
        run: b.forward(tokens, {
          path: new Set([kernel]),
          precision,
          hooks: restrictHooks(planted, kernel),
          taps: 'dump',
        }),
      }));
      const bj = new JobList(T, precision);
      const idx = runs.map(({ run }) =>
        layers.map((_, i) => bj.compare(f32(run, dumpName(i)), f32(ref, dumpName(i)), `bisection ${i}`)),
      );
      const p = bj.record(metrics, b.encoder);
      b.onRelease(() => p.release());
      await b.submit();
      const r = (await p.read()).compare;
      return runs.map(({ kernel }, j): BisectionRow => {
        let firstLayer: number | null = null;
        let worst = { value: 0, ratio: 0 };
        idx[j].forEach((jobIndex, i) => {
          const m = r[jobIndex].metrics;
          const ratio = ratioOf(m, layers[i].floor, metric, precision, scaleOf(perLayer[i].scale));
          const hit = ratio > k || nonFiniteIn(m) > 0;
          if (hit && firstLayer === null) {
            firstLayer = i;
            worst = { value: metricValue(m, metric), ratio };
          } else if (firstLayer === null && ratio > worst.ratio)
            worst = { value: metricValue(m, metric), ratio };
        });
        return { kernel, reproduces: firstLayer !== null, firstLayer, ...worst };
      });
    });
    if (bisection) opts.onPartial?.({ kind: 'bisection', bisection });

    // 3. Determinism: the fused path again, bit for bit, compared on the GPU — once as it was, once with another
    // flash-attention query-tile shape. A correct kernel gives identical bits either way (every output row is
    // computed by the same arithmetic whatever tile it falls in); a race shows up in one of the two even on an
    // emulator whose scheduling is itself deterministic.
    const determinism = await step('determinism', async (): Promise<DeterminismResult> => {
      if (skip.determinism) return { identical: true, differences: [], runs: [] };
      const b = newBatch();
      const schedules: [string, PlanHooks][] = [
        ['repeat', hooks],
        ['query tile 8', withConstants(hooks, 'flash_attention', { BQ: 8 })],
      ];
      const names = [...fused.taps.keys()];
      const bj = new JobList(T, precision);
      const idx = schedules.map(([, h]) => {
        const again = b.forward(tokens, { path: fusedSet, precision, hooks: h, taps });
        return names.map((name) => bj.bitDiff(fused.taps.get(name)!, again.taps.get(name)!));
      });
      const p = bj.record(metrics, b.encoder);
      b.onRelease(() => p.release());
      await b.submit();
      const r = (await p.read()).bitDiff;
      const differences: DeterminismResult['differences'] = [];
      const runs = schedules.map(([schedule], s) => {
        const found = names.flatMap((name, j) => {
          const d = r[idx[s][j]];
          return d.count > 0 ? [{ tensor: name, count: d.count, firstIndex: d.firstIndex, schedule }] : [];
        });
        differences.push(...found);
        return { schedule, identical: found.length === 0 };
      });
      return { identical: differences.length === 0, differences, runs };
    });
    opts.onPartial?.({ kind: 'determinism', determinism });
    report = { ...report, bisection, determinism };

    // 4. Greedy generation on both paths (KV cache), token by token.
    const generation = await step('generation', async (): Promise<GenerationResult | null> => {
      if (spec.generate === 0 || skip.generation) return null;
      const text = (ids: number[]) => engine.tokenizer?.decode(ids) ?? null;
      const gen = async (path: 'reference' | 'fused') => {
        const ids: number[] = [];
        await engine.generate(
          tokens,
          spec.generate,
          (id) => {
            ids.push(id);
            opts.onPartial?.({ kind: 'token', path, ids: [...ids], text: text(ids), total: spec.generate });
          },
          opts.signal,
          path === 'reference' ? { path: 'reference', precision } : { path: fusedSet, precision, hooks },
        );
        return ids;
      };
      const refIds = await gen('reference');
      const fusedIds = await gen('fused');
      const first = refIds.findIndex((id, i) => fusedIds[i] !== id);
      return {
        reference: { ids: refIds, text: text(refIds) },
        fused: { ids: fusedIds, text: text(fusedIds) },
        firstDifference: first < 0 ? null : first,
      };
    });
    return { ...report, generation, durations };
  } finally {
    for (const b of batches) b.release();
  }
}

/** Adds override constants to one fused kernel's ops (a schedule perturbation). */
function withConstants(
  h: PlanHooks,
  kernel: FusedKernelId,
  extra: Record<string, number | boolean>,
): PlanHooks {
  return {
    ...h,
    constants: (kk, layer) => ({ ...h.constants?.(kk, layer), ...(kk === kernel ? extra : {}) }),
  };
}

/** The fault hooks limited to the faults that live in `kernel` (bisection switches one kernel on at a time). */
function restrictHooks(planted: PlantedFault[], kernel: FusedKernelId): PlanHooks {
  return faultHooks(planted.filter((f) => faultInfo(f.id).kernel === kernel));
}

export { FUSED_KERNELS };
