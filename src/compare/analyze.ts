// The comparison: runs the reference and fused paths (and the fp64 oracle) for one RunSpec and answers where
// the paths part, whether that is more than honest rounding (the noise floor), whether the error is born in
// a layer or carried in (local vs propagated), which fused kernel is to blame (bisection), whether the fused
// path is deterministic, and what it does to generated text. Used by the worker and the CLI alike.
import type { Engine } from '../engine/engine';
import { FUSED_KERNELS, type FusedKernelId } from '../engine/fused-kernels';
import type { PlanHooks } from '../engine/plan';
import { summarizeTimings, type TimingSummary } from '../engine/timing';
import type { AdapterSummary } from '../gpu/device';
import { oracleForward, oracleLayer } from '../kernels/cpu/forward';
import { type Precision, storageUnitRoundoff } from '../kernels/precision';
import type { HiddenDump, ModelWeights, NeoXConfig } from '../model/types';
import { faultHooks, faultInfo, type PlantedFault, placeFaults } from '../run/faults';
import type { Metric, RunSpec } from '../run/runspec';
import {
  type ErrorHistogram,
  errorHistogram,
  type FullMetrics,
  fullMetrics,
  metricValue,
  perTokenRelL2,
} from './metrics';

export { metricValue };

export const REPORT_SCHEMA = 'divergence-report/1';

export interface LayerResult {
  layer: number;
  /** Noise floor: reference path vs fp64 oracle (end to end). */
  floor: FullMetrics;
  /** Fused vs reference, end to end (error propagated from earlier layers included). */
  propagated: FullMetrics;
  /** Fused vs fp64 oracle, end to end. */
  fusedVsOracle: FullMetrics;
  /** Fused layer i run on the reference path's input to layer i, vs the reference layer i. */
  local: FullMetrics;
  /** Local noise floor: reference layer i on the oracle's input (as f32) vs the oracle's layer i. */
  localFloor: FullMetrics;
  /** The floor the ratio is taken against, in the chosen metric (larger = worse): max(floor, minimum floor). */
  floorValue: number;
  /** k × floorValue: above it the layer diverges. */
  threshold: number;
  /** propagated / floorValue in the chosen metric (for sqnrDb: the dB lost, as a power ratio). */
  ratio: number;
  localRatio: number;
  diverged: boolean;
  /** The local error alone exceeds k × local floor: the error is born in this layer. */
  born: boolean;
  /** Per-token relative L2 of the propagated error ([T]). */
  perToken: number[];
}

export interface TapResult {
  name: string;
  layer: number | null;
  op: string;
  /** 'fused-away' when the fused plan never writes this intermediate out. */
  status: 'compared' | 'fused-away';
  shape: number;
  vsReference: FullMetrics | null;
  refVsOracle: FullMetrics | null;
  histogram: ErrorHistogram | null;
}

export interface BisectionRow {
  kernel: FusedKernelId;
  reproduces: boolean;
  firstLayer: number | null;
  /** The chosen metric at that layer (or the worst layer when it does not reproduce). */
  value: number;
  ratio: number;
}

export interface DeterminismResult {
  identical: boolean;
  /** Tensors whose bits differ from the first fused run, with the schedule of the run that differed. */
  differences: { tensor: string; count: number; firstIndex: number; schedule: string }[];
  runs: { schedule: string; identical: boolean }[];
}

export interface GenerationResult {
  reference: { ids: number[]; text: string | null };
  fused: { ids: number[]; text: string | null };
  firstDifference: number | null;
}

export interface Report {
  schema: typeof REPORT_SCHEMA;
  createdAt: string;
  spec: RunSpec;
  model: { name: string; config: NeoXConfig };
  adapter: AdapterSummary;
  tokens: number[];
  plantedFaults: PlantedFault[];
  metric: Metric;
  k: number;
  layers: LayerResult[];
  firstDivergentLayer: number | null;
  /** The first layer whose error is born there (local), or null. */
  firstBornLayer: number | null;
  verdict: 'agree' | 'diverged';
  logits: { propagated: FullMetrics; floor: FullMetrics };
  taps: TapResult[];
  bisection: BisectionRow[] | null;
  determinism: DeterminismResult;
  generation: GenerationResult | null;
  timing: { reference: TimingSummary | null; fused: TimingSummary | null; speedup: number | null };
  /** Wall time of the phases, milliseconds. */
  durations: Record<string, number>;
}

export interface AnalyzeOptions {
  /** Progress: phase name and fraction done. */
  onProgress?: (phase: string, done: number, total: number) => void;
  signal?: AbortSignal;
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

/**
 * The smallest floor a ratio is taken against, so a layer whose reference happens to be exact (an embedding
 * gather, T = 1) is not declared divergent for one rounding: one unit roundoff of the storage precision in
 * relative terms (squared for the power-like metrics), one ulp, or u × the baseline's magnitude.
 */
function minFloor(metric: Metric, precision: Precision, scale: number): number {
  const u = storageUnitRoundoff(precision);
  switch (metric) {
    case 'relL2':
      return u;
    case 'cosineDistance':
    case 'sqnrDb':
      return u * u;
    case 'maxUlp':
      return 1;
    default:
      return u * scale;
  }
}

function maxAbsOf(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) if (Number.isFinite(a[i])) m = Math.max(m, Math.abs(a[i]));
  return m;
}

function effectiveFloor(floor: FullMetrics, metric: Metric, precision: Precision, scale: number): number {
  return Math.max(metricValue(floor, metric), minFloor(metric, precision, scale));
}

function ratioOf(
  err: FullMetrics,
  floor: FullMetrics,
  metric: Metric,
  precision: Precision,
  scale: number,
): number {
  return metricValue(err, metric) / effectiveFloor(floor, metric, precision, scale);
}

function bitwiseDiff(name: string, a: Float32Array, b: Float32Array) {
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  let count = 0;
  let first = -1;
  for (let i = 0; i < ua.length; i++) {
    if (ua[i] !== ub[i]) {
      if (first < 0) first = i;
      count++;
    }
  }
  return count ? { tensor: name, count, firstIndex: first } : null;
}

function dumpTensors(d: HiddenDump): [string, Float32Array][] {
  return [
    ['embeddings', d.embeddings],
    ...d.layers.map((l, i): [string, Float32Array] => [`layers[${i}]`, l]),
    ['final_norm', d.finalNorm],
    ['logits', d.logits],
  ];
}

const ORACLE_CACHE_ENTRIES = 4;
const oracleCache = new WeakMap<
  ModelWeights,
  Map<string, { dump: HiddenDump<Float64Array>; taps: Map<string, Float64Array> | undefined }>
>();

/** Runs the whole comparison for `spec` on the engine's loaded model. */
export async function analyze(
  engine: Engine,
  spec: RunSpec,
  tokens: number[],
  opts: AnalyzeOptions = {},
): Promise<Report> {
  const info = engine.modelInfo;
  const w = engine.weights;
  if (!info || !w) throw new Error('no model is loaded');
  const cfg = info.config;
  const L = cfg.numLayers;
  const T = tokens.length;
  const d = cfg.hiddenSize;
  const { precision, metric, k } = spec;
  const fusedSet = new Set<FusedKernelId>(spec.fused);
  const planted = placeFaults(spec.faults, spec.seed, L);
  const hooks = faultHooks(planted);
  const durations: Record<string, number> = {};
  const skip = opts.skip ?? {};
  const phases = 7;
  let phase = 0;
  const step = async <R>(name: string, f: () => Promise<R> | R): Promise<R> => {
    if (opts.signal?.aborted) throw new AnalysisCancelled('analysis cancelled');
    opts.onProgress?.(name, phase, phases);
    const t0 = performance.now();
    const r = await f();
    durations[name] = performance.now() - t0;
    phase++;
    return r;
  };

  // 1. Both paths, every tap, timed per op.
  const ref = await step('reference', () =>
    engine.forward(tokens, {
      path: 'reference',
      precision,
      taps: skip.taps ? undefined : 'all',
      timing: true,
    }),
  );
  const fused = await step('fused', () =>
    engine.forward(tokens, {
      path: fusedSet,
      precision,
      hooks,
      taps: skip.taps ? undefined : 'all',
      timing: true,
    }),
  );
  // 2. The fp64 oracle (exact: no storage rounding — the floor is how far the reference path is from exact).
  // The oracle depends on the model and the prompt only (not on the fused kernels, faults or precision):
  // it is computed once per (weights, tokens) and reused by later comparisons of the same prompt.
  const cached = oracleCache.get(w)?.get(tokens.join(','));
  const { dump: oracle, taps: oracleTaps } = await step('oracle', () => {
    if (cached && (cached.taps || skip.taps)) return cached;
    const taps = skip.taps ? undefined : new Map<string, Float64Array>();
    const entry = { dump: oracleForward(cfg, w, tokens, taps), taps };
    let perModel = oracleCache.get(w);
    if (!perModel) oracleCache.set(w, (perModel = new Map()));
    if (perModel.size >= ORACLE_CACHE_ENTRIES) perModel.delete(perModel.keys().next().value as string);
    perModel.set(tokens.join(','), entry);
    return entry;
  });

  // 3. Local error and local floor, layer by layer.
  const local: FullMetrics[] = [];
  const localFloor: FullMetrics[] = [];
  await step('local', async () => {
    for (let i = 0; i < L; i++) {
      if (opts.signal?.aborted) throw new AnalysisCancelled('analysis cancelled');
      opts.onProgress?.(`local layer ${i}`, i, L);
      const refIn = i === 0 ? ref.dump.embeddings : ref.dump.layers[i - 1];
      if (skip.local) {
        local.push(fullMetrics(fused.dump.layers[i], ref.dump.layers[i], precision));
        localFloor.push(fullMetrics(ref.dump.layers[i], oracle.layers[i], precision));
        continue;
      }
      const one = await engine.forward(tokens, {
        path: fusedSet,
        precision,
        hooks,
        layers: { from: i, to: i + 1, input: refIn },
      });
      local.push(fullMetrics(one.dump.layers[0], ref.dump.layers[i], precision));
      const oracleIn = Float32Array.from(i === 0 ? oracle.embeddings : oracle.layers[i - 1]);
      const refOne = await engine.forward(tokens, {
        path: 'reference',
        precision,
        layers: { from: i, to: i + 1, input: oracleIn },
      });
      const exact = oracleLayer(cfg, w.layers[i], oracleIn, T, i);
      localFloor.push(fullMetrics(refOne.dump.layers[0], exact, precision));
    }
  });

  const layers: LayerResult[] = [];
  for (let i = 0; i < L; i++) {
    const scale = maxAbsOf(ref.dump.layers[i]);
    const floor = fullMetrics(ref.dump.layers[i], oracle.layers[i], precision);
    const propagated = fullMetrics(fused.dump.layers[i], ref.dump.layers[i], precision);
    const ratio = ratioOf(propagated, floor, metric, precision, scale);
    const localRatio = ratioOf(local[i], localFloor[i], metric, precision, scale);
    const floorValue = effectiveFloor(floor, metric, precision, scale);
    layers.push({
      layer: i,
      floorValue,
      threshold: k * floorValue,
      floor,
      propagated,
      fusedVsOracle: fullMetrics(fused.dump.layers[i], oracle.layers[i], precision),
      local: local[i],
      localFloor: localFloor[i],
      ratio,
      localRatio,
      // NaN/Inf in either path is a finding, never agreement (equal NaNs give relL2 0 vs floor 0).
      diverged: ratio > k || nonFiniteIn(propagated) > 0,
      born: localRatio > k || nonFiniteIn(local[i]) > 0,
      perToken: Array.from(perTokenRelL2(fused.dump.layers[i], ref.dump.layers[i], T, d)),
    });
  }
  const firstDivergentLayer = layers.find((l) => l.diverged)?.layer ?? null;
  const firstBornLayer = layers.find((l) => l.born)?.layer ?? null;
  const logitsFloor = fullMetrics(ref.dump.logits, oracle.logits, precision);
  const logitsProp = fullMetrics(fused.dump.logits, ref.dump.logits, precision);
  const logitsDiverged =
    ratioOf(logitsProp, logitsFloor, metric, precision, maxAbsOf(ref.dump.logits)) > k ||
    nonFiniteIn(logitsProp) > 0;
  const verdict = firstDivergentLayer !== null || logitsDiverged ? 'diverged' : 'agree';

  // Per-op taps joined by stable name; what the fused plan never writes is reported as fused away.
  const taps: TapResult[] = [];
  for (const [name, refData] of ref.taps) {
    const m = /^layers\.(\d+)\.(.+)$/.exec(name);
    const fusedData = fused.taps.get(name);
    const exact = oracleTaps?.get(name);
    taps.push({
      name,
      layer: m ? Number(m[1]) : null,
      op: m ? m[2] : name,
      status: fusedData ? 'compared' : 'fused-away',
      shape: refData.length,
      vsReference: fusedData ? fullMetrics(fusedData, refData, precision) : null,
      refVsOracle: exact ? fullMetrics(refData, exact, precision) : null,
      histogram: fusedData ? errorHistogram(fusedData, refData) : null,
    });
  }

  // 4. Bisection: each enabled fused kernel alone (with the faults it carries).
  const bisection = await step('bisection', async () => {
    if (verdict === 'agree' || skip.bisection) return null;
    const rows: BisectionRow[] = [];
    for (const kernel of spec.fused) {
      if (opts.signal?.aborted) throw new AnalysisCancelled('analysis cancelled');
      const one = await engine.forward(tokens, {
        path: new Set([kernel]),
        precision,
        hooks: restrictHooks(hooks, planted, kernel),
      });
      let firstLayer: number | null = null;
      let worst = { value: 0, ratio: 0 };
      one.dump.layers.forEach((l, i) => {
        const m = fullMetrics(l, ref.dump.layers[i], precision);
        const r = ratioOf(m, layers[i].floor, metric, precision, maxAbsOf(ref.dump.layers[i]));
        if (r > k && firstLayer === null) {
          firstLayer = i;
          worst = { value: metricValue(m, metric), ratio: r };
        } else if (firstLayer === null && r > worst.ratio)
          worst = { value: metricValue(m, metric), ratio: r };
      });
      rows.push({ kernel, reproduces: firstLayer !== null, firstLayer, ...worst });
    }
    return rows;
  });

  // 5. Determinism: the fused path again, bit for bit — once as it was, once with another flash-attention
  // query-tile shape. A correct kernel gives identical bits either way (every output row is computed by the
  // same arithmetic whatever tile it falls in); a race shows up in one of the two even on an emulator whose
  // scheduling is itself deterministic.
  const determinism = await step('determinism', async (): Promise<DeterminismResult> => {
    if (skip.determinism) return { identical: true, differences: [], runs: [] };
    const differences: DeterminismResult['differences'] = [];
    const runs: DeterminismResult['runs'] = [];
    const schedules: [string, PlanHooks][] = [
      ['repeat', hooks],
      ['query tile 8', withConstants(hooks, 'flash_attention', { BQ: 8 })],
    ];
    for (const [schedule, h] of schedules) {
      if (opts.signal?.aborted) throw new AnalysisCancelled('analysis cancelled');
      const again = await engine.forward(tokens, {
        path: fusedSet,
        precision,
        hooks: h,
        taps: skip.taps ? undefined : 'all',
      });
      const a = dumpTensors(fused.dump);
      const b = dumpTensors(again.dump);
      const found: DeterminismResult['differences'] = [];
      for (let i = 0; i < a.length; i++) {
        const diff = bitwiseDiff(a[i][0], a[i][1], b[i][1]);
        if (diff) found.push({ ...diff, schedule });
      }
      for (const [name, data] of fused.taps) {
        const other = again.taps.get(name);
        const diff = other ? bitwiseDiff(name, data, other) : null;
        if (diff) found.push({ ...diff, schedule });
      }
      runs.push({ schedule, identical: found.length === 0 });
      differences.push(...found);
    }
    return { identical: differences.length === 0, differences, runs };
  });

  // 6. Greedy generation on both paths.
  const generation = await step('generation', async (): Promise<GenerationResult | null> => {
    if (spec.generate === 0 || skip.generation) return null;
    const refIds = await engine.generate(tokens, spec.generate, undefined, opts.signal, {
      path: 'reference',
      precision,
    });
    const fusedIds = await engine.generate(tokens, spec.generate, undefined, opts.signal, {
      path: fusedSet,
      precision,
      hooks,
    });
    const first = refIds.findIndex((id, i) => fusedIds[i] !== id);
    const text = (ids: number[]) => engine.tokenizer?.decode(ids) ?? null;
    return {
      reference: { ids: refIds, text: text(refIds) },
      fused: { ids: fusedIds, text: text(fusedIds) },
      firstDifference: first < 0 ? null : first,
    };
  });

  const refTiming = ref.timings ? summarizeTimings(ref.timings, L) : null;
  const fusedTiming = fused.timings ? summarizeTimings(fused.timings, L) : null;
  return {
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
    taps,
    bisection,
    determinism,
    generation,
    timing: {
      reference: refTiming,
      fused: fusedTiming,
      speedup:
        refTiming && fusedTiming && fusedTiming.totalNs > 0 ? refTiming.totalNs / fusedTiming.totalNs : null,
    },
    durations,
  };
}

/** Adds override constants to one fused kernel's ops (a schedule perturbation). */
function withConstants(
  h: PlanHooks,
  kernel: FusedKernelId,
  extra: Record<string, number | boolean>,
): PlanHooks {
  return {
    ...h,
    constants: (k, layer) => ({ ...h.constants?.(k, layer), ...(k === kernel ? extra : {}) }),
  };
}

/** The fault hooks limited to the faults that live in `kernel` (bisection switches one kernel on at a time). */
function restrictHooks(_all: PlanHooks, planted: PlantedFault[], kernel: FusedKernelId): PlanHooks {
  return faultHooks(planted.filter((f) => faultInfo(f.id).kernel === kernel));
}

export { FUSED_KERNELS };

/** NaN/±Inf count in either operand of a comparison (a: the compared path, b: its baseline). */
function nonFiniteIn(m: FullMetrics): number {
  return m.nanCount + m.infCount + m.baselineNonFinite;
}
