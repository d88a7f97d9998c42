// The analysis of runs of a Llama-family model made elsewhere (docs/RUNS.md): one or two run files (A, B) of the
// loaded model on the same tokens, in the same report as GPT-NeoX's (runs-report.ts), so the CLI's line, the page's
// results and curves and the runs links read it unchanged. On the CPU, in fp64 (the family's GPU double-float
// oracle, engine/llama-oracle-gpu.ts, serves the two-path compare, not yet this; a big model takes long here):
//   sources     — each run's checks from the slots it records (family-runs-ops.ts), the reference path's own run
//                 at each run's storage precision (the floors' run: the Llama reference forward's taps)
//   oracle      — the exact forward (the op registry's fp64 forward, Hugging Face's fp32 rotary angles) for the
//                 curves, and every check's op re-run exactly from each run's own recorded inputs and from the
//                 reference's (its floor)
//   comparisons — each check's error and its floor, per row too; per layer the curves (each run and the reference
//                 path against the exact forward, B against A)
//   verdict     — each check's ratio to its floor, each run's first born op, in words naming the dump's own module
//                 path (runs-report.ts verdictOf); the decode step where the run is a generation's
//   why         — at each run's first born op, the family's causes and the anatomy (family-runs-why.ts)
// Two generations of one prompt whose texts part are compared on the rows they share, as GPT-NeoX's are.
import { type Engine, EngineError } from '../engine/engine';
import type { AdapterSummary } from '../gpu/device';
import { llamaForward } from '../kernels/cpu/llama-forward';
import { checkSameTokens } from '../model/run-file';
import { type PartedPair, partedPair } from '../model/run-generation';
import type { Precision } from '../numeric/precision';
import type { DType, LlamaConfig, LlamaWeights, NeoXConfig } from '../numeric/types';
import { DEFAULT_K, type Metric } from '../run/runspec';
import { computeCheck, type FamilyRun, familyRunChecks, type GroupContext } from './family-runs-ops';
import { explainFamilyFindings } from './family-runs-why';
import { effectiveFloor, nonFiniteIn, ratioOf } from './floor';
import { type FullMetrics, fullMetrics, perTokenRelL2 } from './metrics';
import { firstRowPast, runRows } from './run-rows';
import type { RunInput } from './runs-input';
import {
  RUNS_REPORT_SCHEMA,
  type RunCheckResult,
  type RunCurve,
  type RunSourceInfo,
  type RunsReport,
  verdictOf,
} from './runs-report';
import { heldRows, partingOfRuns } from './runs-verdict';

const PRECISION: Record<DType, Precision> = { F32: 'fp32', F16: 'fp16', BF16: 'bf16' };

/** The oracle of a Llama-family runs analysis, in the report's words. */
const FAMILY_RUNS_ORACLE = {
  kind: 'cpu' as const,
  reason:
    "each op re-run in fp64 on the CPU by the op registry's forms (kernels/cpu/op-fp64.ts), the exact forward by " +
    'its fp64 forward (kernels/cpu/llama-forward.ts): the GPU double-float forms do not take runs of the family yet',
  selfTest: null,
};

/** The model and what the floors are read from: the reference path's own run, in a precision mode. */
export interface FamilyRunsModel {
  name: string;
  cfg: LlamaConfig;
  /** The dimensions the family shares with GPT-NeoX (the report's `model.config`, the anatomy's heads). */
  shared: NeoXConfig;
  weights: LlamaWeights;
  adapter: AdapterSummary;
  /** The reference path's forward on the tokens with every step's tap (`embed`, `layers.{i}.{slot}`, …). */
  reference(tokens: readonly number[], precision: Precision): Promise<Map<string, Float32Array>>;
}

export interface FamilyRunsOptions {
  k?: number;
  metric?: Metric;
  signal?: AbortSignal;
  onProgress?: (phase: string, done: number, total: number) => void;
}

const maxAbsOf = (v: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < v.length; i++) {
    const x = Math.abs(v[i]);
    if (x > m) m = x;
  }
  return m;
};

/** The analysis of run A (and B, against A) of a Llama-family model. */
export async function analyzeFamilyRuns(
  model: FamilyRunsModel,
  a: RunInput,
  b: RunInput | null,
  opts: FamilyRunsOptions = {},
): Promise<RunsReport> {
  if (b) checkSameTokens(a.file, b.file);
  // Two generations whose texts part: compared on the rows they share.
  const parted = b ? partedPair(a.file, b.file) : null;
  if (b && parted && (parted.rows < a.file.tokens.length || parted.rows < b.file.tokens.length)) {
    const cut = (r: RunInput): RunInput => ({ file: runRows(r.file, parted.rows), sha256: r.sha256 });
    const report = await analyzeSame(model, cut(a), cut(b), opts, parted);
    heldRows(report, { A: a.file.tokens.length, B: b.file.tokens.length });
    return report;
  }
  return analyzeSame(model, a, b, opts, parted);
}

async function analyzeSame(
  model: FamilyRunsModel,
  a: RunInput,
  b: RunInput | null,
  opts: FamilyRunsOptions,
  parted: PartedPair | null,
): Promise<RunsReport> {
  const { cfg } = model;
  const tokens = a.file.tokens;
  const T = tokens.length;
  const k = opts.k ?? DEFAULT_K;
  const metric = opts.metric ?? 'relL2';
  const durations: Record<string, number> = {};
  const phases = ['sources', 'oracle', 'comparisons', 'verdict', 'why'];
  const phase = async <R>(name: string, f: () => Promise<R> | R): Promise<R> => {
    if (opts.signal?.aborted) throw new EngineError('run analysis cancelled', 'cancelled');
    opts.onProgress?.(name, phases.indexOf(name), phases.length);
    // A phase's work is synchronous CPU work: a turn of the event loop first lets a cancel and progress through.
    await new Promise((r) => setTimeout(r, 0));
    const t0 = performance.now();
    const r = await f();
    durations[name] = (durations[name] ?? 0) + performance.now() - t0;
    return r;
  };
  const inputs = [a, b].filter((r): r is RunInput => r !== null);
  // The work is synchronous fp64 on this thread: a turn of the event loop every 50 ms or so lets a cancel (and
  // the page's progress) through in the middle of a phase; a cancel is then said at once.
  let last = performance.now();
  const yieldNow = async () => {
    if (performance.now() - last < 50) return;
    await new Promise((r) => setTimeout(r, 0));
    last = performance.now();
    if (opts.signal?.aborted) throw new EngineError('run analysis cancelled', 'cancelled');
  };

  const { runs, refs } = await phase('sources', async () => {
    const runs: FamilyRun[] = inputs.map((input, j) => {
      const slots = input.file.slots;
      const { checks, missing } = familyRunChecks(cfg, (s) => slots.has(s));
      return {
        id: j === 0 ? 'A' : 'B',
        input,
        precision: PRECISION[input.file.storage],
        checks,
        missing,
        slot: (s) => slots.get(s)?.data ?? null,
        name: (s) => slots.get(s)?.name ?? s,
      };
    });
    // The floors' runs: the reference path at each run's storage precision, and at fp32 for the curves.
    const refs = new Map<Precision, Map<string, Float32Array>>();
    for (const p of new Set<Precision>(['fp32', ...runs.map((r) => r.precision)]))
      refs.set(p, await model.reference(tokens, p));
    return { runs, refs };
  });

  const ctx: GroupContext = { cfg, weights: model.weights, tokens, angles: 'hf-fp32' };
  const { exactTaps, checkExact } = await phase('oracle', async () => {
    const exactTaps = new Map<string, Float64Array>();
    llamaForward(cfg, model.weights, tokens, exactTaps, { angles: 'hf-fp32' });
    const checkExact: { own: Float64Array[]; kept: Map<string, Float64Array>[]; floor: Float64Array[] }[] =
      [];
    for (const r of runs) {
      const ref = refs.get(r.precision)!;
      const e = {
        own: [] as Float64Array[],
        kept: [] as Map<string, Float64Array>[],
        floor: [] as Float64Array[],
      };
      for (const c of r.checks) {
        const kept = new Map<string, Float64Array>();
        e.own.push(computeCheck(c, ctx, r.slot, null, kept));
        e.kept.push(kept);
        e.floor.push(computeCheck(c, ctx, (s) => ref.get(s) ?? null));
        await yieldNow();
      }
      checkExact.push(e);
    }
    return { exactTaps, checkExact };
  });

  const { checks, curves } = await phase('comparisons', () => {
    const checks: RunCheckResult[] = runs.flatMap((r, j) =>
      r.checks.map((c, i) => {
        const P = r.precision;
        const recorded = r.slot(c.output)!;
        const refOut = refs.get(P)!.get(c.output)!;
        const exact = checkExact[j].own[i];
        const floorExact = checkExact[j].floor[i];
        const error = fullMetrics(recorded, exact, P);
        const floor = fullMetrics(refOut, floorExact, P);
        const scale = maxAbsOf(recorded);
        const ratio = ratioOf(error, floor, metric, P, scale);
        const nonFinite = nonFiniteIn(error);
        const width = recorded.length / T;
        const firstRow = firstRowPast(
          perTokenRelL2(recorded, exact, T, width),
          perTokenRelL2(refOut, floorExact, T, width),
          floor.relL2,
          P,
          k,
        );
        return {
          run: r.id,
          id: c.id,
          op: c.op,
          layer: c.layer,
          module: c.module,
          what: c.what,
          inputs: c.inputs.map(r.name),
          output: r.name(c.output),
          error,
          floor,
          floorValue: effectiveFloor(floor, metric, P, scale),
          ratio,
          nonFinite,
          born: ratio > k || nonFinite > 0,
          firstRow,
        };
      }),
    );
    const ref32 = refs.get('fp32')!;
    const layerSlots = [
      'embed',
      ...Array.from({ length: cfg.numLayers }, (_, i) => `layers.${i}.out`),
      'final_norm',
      'logits',
    ];
    const lowest = runs.reduce<Precision>((p, r) => (r.precision === 'fp32' ? p : r.precision), 'fp32');
    const curves: RunCurve[] = layerSlots.flatMap((slot) => {
      const exact = exactTaps.get(slot);
      const ref = ref32.get(slot);
      if (!exact || !ref) return [];
      const floor = fullMetrics(ref, exact, 'fp32');
      const scale = maxAbsOf(ref);
      const point = (m: FullMetrics, P: Precision) => {
        const ratio = ratioOf(m, floor, metric, P, scale);
        return { metrics: m, ratio, diverged: ratio > k || nonFiniteIn(m) > 0 };
      };
      const got = runs.map((r) => r.slot(slot));
      const [ga, gb] = got;
      return [
        {
          slot,
          floor,
          floorValue: effectiveFloor(floor, metric, 'fp32', scale),
          runs: Object.fromEntries(
            runs.map((r, j) => {
              const g = got[j];
              return [r.id, g ? point(fullMetrics(g, exact, r.precision), r.precision) : null];
            }),
          ),
          bVsA: runs.length === 2 && ga && gb ? point(fullMetrics(gb, ga, lowest), lowest) : null,
        },
      ];
    });
    return { checks, curves };
  });

  const report = await phase('verdict', () => {
    const sources: RunSourceInfo[] = runs.map((r) => {
      const f = r.input.file;
      return {
        id: r.id,
        file: f.file,
        sha256: r.input.sha256,
        label: f.label,
        device: f.device,
        dtype: f.dtype,
        storage: f.storage,
        tensors: f.slots.size,
        ignored: f.ignored,
        handoffs: f.handoffs,
        checks: r.checks.length,
        missing: r.missing,
        generation: f.generation ?? null,
      };
    });
    const report: RunsReport = {
      schema: RUNS_REPORT_SCHEMA,
      createdAt: new Date().toISOString(),
      model: { name: model.name, config: model.shared, family: 'llama', flavour: cfg.flavour },
      adapter: model.adapter,
      tokens,
      metric,
      k,
      oracle: FAMILY_RUNS_ORACLE,
      metricsOn: 'cpu',
      floorFrom:
        "the engine's Llama reference path at each run's storage precision, its local error at the same op",
      runs: sources,
      curves,
      checks,
      ...verdictOf(sources, checks, curves, k),
      durations,
    };
    return report;
  });
  if (parted && b) {
    const V = cfg.vocabSize;
    const row = (v: ArrayLike<number> & { subarray(a: number, b: number): ArrayLike<number> }) =>
      v.subarray(parted.row * V, (parted.row + 1) * V);
    const lg = (r: FamilyRun) => {
      const t = r.slot('logits');
      return t ? row(t) : null;
    };
    const exactLogits = exactTaps.get('logits');
    report.parting = partingOfRuns(
      parted,
      a.file.generation!.prefill,
      { A: lg(runs[0]), B: lg(runs[1]) },
      exactLogits ? row(exactLogits) : null,
      report.curves.find((c) => c.slot === 'logits')?.floor ?? null,
      runs.reduce<Precision>((p, r) => (r.precision === 'fp32' ? p : r.precision), 'fp32'),
      k,
    );
  }
  await phase('why', () =>
    explainFamilyFindings(
      report,
      runs,
      ctx,
      model.shared,
      (j, i) => ({ exact: checkExact[j].own[i], kept: checkExact[j].kept[i] }),
      yieldNow,
    ),
  );
  if (report.parting) report.sentence = `${report.sentence} ${report.parting.words}`;
  return report;
}

/** The loaded Llama-family model of an engine as the analysis reads it: the floors from its reference path. */
export function familyRunsModel(engine: Engine): FamilyRunsModel {
  const m = engine.llamaModel;
  const info = engine.modelInfo;
  if (!m || !info) throw new Error('no Llama-family model is loaded');
  return {
    name: info.name,
    cfg: m.cfg,
    shared: info.config,
    weights: m.weights,
    adapter: engine.adapter,
    reference: async (tokens, precision) =>
      (await m.forward(tokens, { path: 'reference', taps: 'all', precision })).taps,
  };
}
