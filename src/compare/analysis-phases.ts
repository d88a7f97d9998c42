// The comparison's main phases as functions over one context (analyze.ts runs them in order): sources (the two
// paths, runs with every tap), oracle (exact forward and every layer's local floor pair), local (each fused layer on
// the reference path's input, each reference layer on the oracle's), comparisons (every reduction in the same submit,
// only summaries read back) and verdict (the report's layers, taps and timing).
import type { BatchForward, GpuBatch } from '../engine/batch';
import type { Engine } from '../engine/engine';
import type { FusedKernelId } from '../engine/fused-kernels';
import type { PlanHooks } from '../engine/plan';
import { summarizeTimings } from '../engine/timing';
import type { PlantedFault } from '../run/faults';
import type { RunSpec } from '../run/runspec';
import type { DecodeChecker } from './decode-run-file';
import { effectiveFloor, needsScale, nonFiniteIn, ratioOf } from './floor';
import type { CompareOut } from './gpu-metrics';
import { JobList, type MetricsEngine, type Side } from './jobs';
import type { FullMetrics } from './metrics';
import {
  decideOracle,
  type OracleChoice,
  type OracleTensors,
  oracleTensors,
  type SelfTestOptions,
} from './oracle-source';
import { type LayerResult, REPORT_SCHEMA, type Report, type TapResult } from './report';

/** What every phase reads: the spec, the model, the faults, where metrics are reduced, the batches to release. */
export interface AnalysisContext {
  engine: Engine;
  spec: RunSpec;
  tokens: number[];
  fusedSet: Set<FusedKernelId>;
  planted: PlantedFault[];
  hooks: PlanHooks;
  metrics: MetricsEngine;
  metricsOn: 'gpu' | 'cpu';
  taps: 'dump' | 'all';
  skipLocal: boolean;
  /**
   * Checks each path's recorded decode as a run (decode-runs.ts): generation.decode. Without it no decode check
   * runs; with it, the check runs when asked (`decodeCheck: 'asked'`) or by itself where the generation diverges.
   */
  checkDecode?: DecodeChecker;
  /** 'asked': record and check the decode whatever the text does; 'auto' (default): only where the generation diverges. */
  decodeCheck?: 'asked' | 'auto';
  /** Progress within a phase (the decode check started by the generation phase). */
  onProgress?: (phase: string) => void;
  durations: Record<string, number>;
  newBatch(): GpuBatch;
}

/** The two engine runs of the spec, recorded into the first batch with every tap (timed per op). */
export interface EngineRuns {
  batch: GpuBatch;
  ref: BatchForward;
  fused: BatchForward;
}

export const dumpName = (i: number) => (i < 0 ? 'embed' : `layers.${i}.out`);
export const f32 = (run: BatchForward, name: string): Side => ({ f32: run.taps.get(name)! });

export function sources(c: AnalysisContext): EngineRuns {
  const { precision } = c.spec;
  const batch = c.newBatch();
  const ref = batch.forward(c.tokens, { path: 'reference', precision, taps: c.taps, timing: true });
  const fused = batch.forward(c.tokens, {
    path: c.fusedSet,
    precision,
    hooks: c.hooks,
    taps: c.taps,
    timing: true,
  });
  batch.flush(); // the GPU runs both paths while the CPU records the oracle
  return { batch, ref, fused };
}

export async function oracle(
  c: AnalysisContext,
  runs: EngineRuns,
  choice: OracleChoice,
  selfTest?: SelfTestOptions,
): Promise<{ tensors: OracleTensors; info: Awaited<ReturnType<typeof decideOracle>> }> {
  const info = await decideOracle(c.engine, choice, selfTest);
  const layers = c.skipLocal ? [] : Array.from({ length: c.engine.modelInfo!.config.numLayers }, (_, i) => i);
  const tensors = oracleTensors(c.engine, runs.batch, info, c.tokens, layers);
  runs.batch.flush(); // the GPU runs the oracle while the CPU records the local re-runs and the reductions
  return { tensors, info };
}

/** Each fused layer on the reference path's input, each reference layer on the oracle's (the local floor). */
export function local(c: AnalysisContext, runs: EngineRuns, o: OracleTensors) {
  if (c.skipLocal) return null;
  const { precision } = c.spec;
  const runsOf = Array.from({ length: c.engine.modelInfo!.config.numLayers }, (_, i) => ({
    fused: runs.batch.forward(c.tokens, {
      path: c.fusedSet,
      precision,
      hooks: c.hooks,
      taps: 'dump',
      layers: { from: i, to: i + 1, input: runs.ref.taps.get(dumpName(i - 1))!.buffer },
    }),
    ref: runs.batch.forward(c.tokens, {
      path: 'reference',
      precision,
      taps: 'dump',
      layers: { from: i, to: i + 1, input: o.local(i).input },
    }),
  }));
  runs.batch.flush();
  return runsOf;
}

/**
 * Every comparison of the analysis as GPU reductions in the first batch's last submit; the summaries read back.
 * `afterSubmit` runs once that submit is made, before its results are awaited (the next phase's work recorded
 * while the GPU is busy with this one).
 */
export async function comparisons(
  c: AnalysisContext,
  runs: EngineRuns,
  o: OracleTensors,
  locals: ReturnType<typeof local>,
  afterSubmit?: () => void,
) {
  const cfg = c.engine.modelInfo!.config;
  const T = c.tokens.length;
  const { ref, fused, batch } = runs;
  const scaled = needsScale(c.spec.metric);
  const zero = scaled ? batch.buffer(T * Math.max(cfg.hiddenSize, cfg.vocabSize) * 4, 'zero') : null;
  const jobs = new JobList(T, c.spec.precision);
  const df = (name: string): Side => ({ df: o.taps.get(name)! });
  const z = (n: number): Side => ({ zero: zero!, floats: n });
  const perLayer = Array.from({ length: cfg.numLayers }, (_, i) => {
    const name = dumpName(i);
    return {
      floor: jobs.compare(f32(ref, name), df(name), `${name} floor`),
      propagated: jobs.compare(f32(fused, name), f32(ref, name), `${name} propagated`, { perRow: true }),
      fusedVsOracle: jobs.compare(f32(fused, name), df(name), `${name} fused vs oracle`),
      local: locals
        ? jobs.compare(f32(locals[i].fused, name), f32(ref, name), `${name} local`)
        : jobs.compare(f32(fused, name), f32(ref, name), `${name} local`),
      localFloor: locals
        ? jobs.compare(f32(locals[i].ref, name), { df: o.local(i).exact }, `${name} local floor`)
        : jobs.compare(f32(ref, name), df(name), `${name} local floor`),
      scale: scaled ? jobs.compare(f32(ref, name), z(T * cfg.hiddenSize), `${name} scale`) : -1,
    };
  });
  const logits = {
    floor: jobs.compare(f32(ref, 'logits'), df('logits'), 'logits floor'),
    propagated: jobs.compare(f32(fused, 'logits'), f32(ref, 'logits'), 'logits propagated'),
    scale: scaled ? jobs.compare(f32(ref, 'logits'), z(T * cfg.vocabSize), 'logits scale') : -1,
  };
  const taps =
    c.taps === 'dump'
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
            refVsOracle: o.taps.has(name) ? jobs.compare(f32(ref, name), df(name), `${name} vs oracle`) : -1,
          };
        });
  // Its parts timed apart (recording the reductions, the wait for the batch's GPU work, the readback).
  const t0 = performance.now();
  const pending = jobs.record(c.metrics, batch.encoder);
  batch.onRelease(() => pending.release());
  const t1 = performance.now();
  const submitted = batch.submit();
  try {
    afterSubmit?.();
  } finally {
    await submitted;
  }
  const t2 = performance.now();
  const { compare: out } = await pending.read();
  Object.assign(c.durations, {
    'comparisons.record': t1 - t0,
    'comparisons.gpu': t2 - t1,
    'comparisons.read': performance.now() - t2,
  });
  const got = (j: number): FullMetrics => out[j].metrics;
  return {
    perLayer,
    logits,
    taps,
    out,
    got,
    /** The baseline's largest magnitude (the floor of maxAbs / meanAbs), 0 where not measured. */
    scaleOf: (j: number) => (j < 0 ? 0 : got(j).maxAbs),
  };
}

export type Measured = Awaited<ReturnType<typeof comparisons>>;

/** The report of the main phases: per-layer verdicts (propagated and local against their floors), taps, timing. */
export function verdict(
  c: AnalysisContext,
  runs: EngineRuns,
  m: Measured,
  oracleInfo: Awaited<ReturnType<typeof decideOracle>>,
): Report {
  const { engine, spec } = c;
  const info = engine.modelInfo!;
  const L = info.config.numLayers;
  const { metric, precision, k } = spec;
  const { got, scaleOf } = m;
  const layers: LayerResult[] = m.perLayer.map((j, i) => {
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
      perToken: Array.from(m.out[j.propagated].perRow ?? []),
    };
  });
  const firstDivergentLayer = layers.find((l) => l.diverged)?.layer ?? null;
  const firstBornLayer = layers.find((l) => l.born)?.layer ?? null;
  const logitsFloor = got(m.logits.floor);
  const logitsProp = got(m.logits.propagated);
  const logitsDiverged =
    ratioOf(logitsProp, logitsFloor, metric, precision, scaleOf(m.logits.scale)) > k ||
    nonFiniteIn(logitsProp) > 0;
  const taps: TapResult[] = m.taps.map((t) => ({
    name: t.name,
    layer: t.layer,
    op: t.op,
    status: t.compared ? 'compared' : 'fused-away',
    shape: t.shape,
    vsReference: t.vsReference < 0 ? null : got(t.vsReference),
    refVsOracle: t.refVsOracle < 0 ? null : got(t.refVsOracle),
    histogram: t.vsReference < 0 ? null : (m.out[t.vsReference] as CompareOut).histogram,
  }));
  const refTiming = runs.ref.timings ? summarizeTimings(runs.ref.timings, L) : null;
  const fusedTiming = runs.fused.timings ? summarizeTimings(runs.fused.timings, L) : null;
  return {
    schema: REPORT_SCHEMA,
    createdAt: new Date().toISOString(),
    spec,
    model: { name: info.name, config: info.config },
    adapter: engine.adapter,
    tokens: c.tokens,
    plantedFaults: c.planted,
    metric,
    k,
    layers,
    firstDivergentLayer,
    firstBornLayer,
    verdict: firstDivergentLayer !== null || logitsDiverged ? 'diverged' : 'agree',
    logits: { propagated: logitsProp, floor: logitsFloor },
    taps,
    bisection: null,
    determinism: { identical: true, differences: [], runs: [] },
    generation: null,
    timing: {
      reference: refTiming,
      fused: fusedTiming,
      speedup:
        refTiming && fusedTiming && fusedTiming.totalNs > 0 ? refTiming.totalNs / fusedTiming.totalNs : null,
    },
    oracle: { kind: oracleInfo.kind, reason: oracleInfo.reason, selfTest: oracleInfo.selfTest },
    metricsOn: c.metricsOn,
    durations: c.durations,
    runs: [
      { id: 'reference', source: 'engine', precision, kernels: [] },
      { id: 'fused', source: 'engine', precision, kernels: [...spec.fused] },
    ],
  };
}
