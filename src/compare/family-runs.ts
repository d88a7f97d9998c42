// The analysis of runs of a Llama-family model made elsewhere (docs/RUNS.md): one or two run files (A, B) of the
// loaded model on the same tokens, in the same report as GPT-NeoX's (runs-report.ts), so the CLI's line, the page's
// results and curves and the runs links read it unchanged. Fed as the files are read (streamFamilyRuns,
// family-runs-stream.ts), on the family's GPU double-float oracle where its self-test passed (family-runs-gpu.ts),
// else in fp64 on the CPU:
//   sources     — each run's checks from the slots its header names (family-runs-ops.ts), the reference path's own
//                 run at each run's storage precision (the floors' run: the Llama reference forward's taps)
//   oracle      — the exact forward (the op registry's df or fp64 forward, Hugging Face's fp32 rotary angles) for
//                 the curves, and every check's op re-run exactly from each run's own recorded inputs (as they
//                 arrive) and from the reference's (its floor)
//   comparisons — each check's error and its floor, per row too; per layer the curves (each run and the reference
//                 path against the exact forward, B against A)
//   verdict     — each check's ratio to its floor, each run's first born op, in words naming the dump's own module
//                 path (runs-report.ts verdictOf); the decode step where the run is a generation's
//   why         — at each run's first born op, the family's causes and the anatomy (family-runs-why.ts)
// Two generations of one prompt whose texts part are compared on the rows they share, as GPT-NeoX's are.
import { type Engine, EngineError } from '../engine/engine';
import type { AdapterSummary } from '../gpu/device';
import { BufferPool } from '../gpu/pool';
import { checkSameTokens, type ReadRunOptions } from '../model/run-file';
import { type PartedPair, partedPair } from '../model/run-generation';
import type { Precision } from '../numeric/precision';
import type { LlamaConfig, LlamaWeights, NeoXConfig } from '../numeric/types';
import { DEFAULT_K, type Metric } from '../run/runspec';
import { compareFed } from './family-runs-compare';
import { gpuRerunOf } from './family-runs-gpu';
import type { FamilyRun } from './family-runs-ops';
import { FamilyRunsFeed, type FedAnalysis, type FeedModel, type FeedOracle } from './family-runs-stream';
import { explainFamilyFindings } from './family-runs-why';
import { familyOracle } from './family-selftest';
import type { OracleChoice } from './oracle-source';
import { runRows } from './run-rows';
import type { RunInput } from './runs-input';
import { RUNS_REPORT_SCHEMA, type RunSourceInfo, type RunsReport, verdictOf } from './runs-report';
import { heldRows, partingOfRuns } from './runs-verdict';

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
  /** The oracle for an analysis (the CPU fp64 forms where absent). */
  oracle?(choice: OracleChoice): Promise<FeedOracle>;
}

export interface FamilyRunsOptions {
  k?: number;
  metric?: Metric;
  /** 'auto' (default): the GPU double-float route where the family's self-test passed on a real GPU. */
  oracle?: OracleChoice;
  signal?: AbortSignal;
  onProgress?: (phase: string, done: number, total: number) => void;
}

/** The CPU route, in the report's words. */
const CPU_ORACLE: FeedOracle = {
  info: {
    kind: 'cpu',
    reason: 'no GPU double-float oracle was offered: the fp64 forms ran on the CPU',
    selfTest: null,
  },
  gpu: null,
  release: () => undefined,
};

/** What a feed reads of the model (the Hugging Face fp32 rotary angles: how the runs were made). */
function feedModelOf(model: FamilyRunsModel, opts: FamilyRunsOptions): FeedModel {
  return {
    ctx: (tokens) => ({ cfg: model.cfg, weights: model.weights, tokens, angles: 'hf-fp32' }),
    reference: (tokens, p) => model.reference(tokens, p),
    oracle: () => (model.oracle ? model.oracle(opts.oracle ?? 'auto') : Promise.resolve(CPU_ORACLE)),
  };
}

/** A run no reader fed: its header and every slot handed to the feed now. */
function feedWhole(feed: FamilyRunsFeed, j: number, r: RunInput): void {
  const f = r.file;
  const slots = new Map([...f.slots].map(([slot, t]) => [slot, { name: t.name, dtype: t.dtype }]));
  feed.header(j, { tokens: f.tokens, slots });
  for (const [slot, t] of f.slots) feed.tensor(j, slot, t);
}

/** An analysis fed as its run files are read (as analyze-runs.ts streamRuns is for GPT-NeoX). */
export interface FamilyRunsStream {
  /** What run j's reader calls (readRunFile's onHeader and onSlot): run 0 is A, run 1 is B. */
  reader(j: number): Required<Pick<ReadRunOptions, 'onHeader' | 'onSlot'>>;
  /** The report, once the runs are whole (a run no reader fed is taken whole here); its buffers are then back. */
  report(a: RunInput, b: RunInput | null): Promise<RunsReport>;
  /** The buffers back where no report will be asked for (a refused file, a stopped read). */
  release(): Promise<void>;
  /** Each run's checks re-run so far (none until the model is in). */
  progress(): number[];
}

/**
 * The analysis of `count` runs (1 or 2) fed as they are read: the oracle chosen and the references started on the
 * first header's tokens, each check re-run as soon as its inputs are in, between the reader's reads
 * (family-runs-stream.ts).
 */
export function streamFamilyRuns(
  model: FamilyRunsModel | Promise<FamilyRunsModel>,
  count: number,
  opts: FamilyRunsOptions = {},
): FamilyRunsStream {
  // The model may be on its way (the CLI reads while it loads): what the readers hand over waits for it.
  let feed: FamilyRunsFeed | null = null;
  let queue: ((f: FamilyRunsFeed) => void)[] = [];
  const made = Promise.resolve(model).then((m) => {
    feed = new FamilyRunsFeed(feedModelOf(m, opts), count, opts.signal);
    const q = queue;
    queue = [];
    for (const f of q) f(feed);
    later();
    return { m, feed };
  });
  made.catch(() => undefined); // awaited by report(); an error then, not an unhandled rejection now
  const fedRuns = new Set<number>();
  let soon = false;
  const later = () => {
    if (soon || !feed) return;
    soon = true;
    setTimeout(() => {
      soon = false;
      void feed?.work();
    }, 0);
  };
  const take = (f: (feed: FamilyRunsFeed) => void) => {
    if (feed) f(feed);
    else queue.push(f);
    later();
  };
  return {
    reader: (j) => ({
      onHeader(h) {
        fedRuns.add(j);
        take((f) => f.header(j, h));
      },
      onSlot(slot, t) {
        take((f) => f.tensor(j, slot, t));
      },
    }),
    async report(a, b) {
      if (b) checkSameTokens(a.file, b.file);
      const { m, feed } = await made;
      const parted = b ? partedPair(a.file, b.file) : null;
      // Two generations whose texts part: compared on the rows they share, in an analysis of those rows.
      if (b && parted && (parted.rows < a.file.tokens.length || parted.rows < b.file.tokens.length)) {
        await feed.abandon();
        const cut = (r: RunInput): RunInput => ({ file: runRows(r.file, parted.rows), sha256: r.sha256 });
        const report = await analyzeSame(m, cut(a), cut(b), opts, parted, null);
        heldRows(report, { A: a.file.tokens.length, B: b.file.tokens.length });
        return report;
      }
      for (const [j, r] of [a, b].entries()) if (r && !fedRuns.has(j)) feedWhole(feed, j, r);
      return analyzeSame(m, a, b, opts, parted, feed);
    },
    progress: () => feed?.progress() ?? Array(count).fill(0),
    release: () =>
      made.then(
        ({ feed }) => feed.abandon(),
        () => undefined,
      ),
  };
}

/** The analysis of run A (and B, against A) of a Llama-family model, its runs whole. */
export function analyzeFamilyRuns(
  model: FamilyRunsModel,
  a: RunInput,
  b: RunInput | null,
  opts: FamilyRunsOptions = {},
): Promise<RunsReport> {
  return streamFamilyRuns(model, b ? 2 : 1, opts).report(a, b);
}

async function analyzeSame(
  model: FamilyRunsModel,
  a: RunInput,
  b: RunInput | null,
  opts: FamilyRunsOptions,
  parted: PartedPair | null,
  given: FamilyRunsFeed | null,
): Promise<RunsReport> {
  const T = a.file.tokens.length;
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

  // Every run fed (whole, where no reader fed it as it was read), its checks re-run, the floors and the exact forward.
  const feed = given ?? new FamilyRunsFeed(feedModelOf(model, opts), inputs.length, opts.signal);
  await phase('sources', () => {
    if (!given) for (const [j, r] of inputs.entries()) feedWhole(feed, j, r);
  }).catch(async (e: unknown) => {
    await feed.abandon();
    throw e;
  });
  const fedAll = await phase('oracle', () => feed.done(inputs)).catch(async (e: unknown) => {
    await feed.abandon();
    throw e;
  });
  try {
    return await analyzeFed(model, fedAll, a, b, parted, { T, k, metric, durations, phase, yieldNow });
  } finally {
    fedAll.oracle.release();
  }
}

/** What analyzeFed shares with analyzeSame. */
interface Shared {
  T: number;
  k: number;
  metric: Metric;
  durations: Record<string, number>;
  phase: <R>(name: string, f: () => Promise<R> | R) => Promise<R>;
  yieldNow: () => Promise<void>;
}

/** The comparisons, the verdict and the why, every run's checks re-run (`fedAll`). */
async function analyzeFed(
  model: FamilyRunsModel,
  fedAll: FedAnalysis,
  a: RunInput,
  b: RunInput | null,
  parted: PartedPair | null,
  { T, k, metric, durations, phase, yieldNow }: Shared,
): Promise<RunsReport> {
  const { cfg } = model;
  const tokens = a.file.tokens;
  const { runs, ctx, exactTaps } = fedAll;
  durations.sources = fedAll.ms.sources;
  durations.oracle = fedAll.ms.oracle;
  const { checks, curves } = await phase('comparisons', () => compareFed(fedAll, T, k, metric));

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
      oracle: {
        ...fedAll.oracle.info,
        reason: `${fedAll.oracle.info.reason}; ${fedAll.gpuChecks} checks re-run in double-float on the GPU, ${fedAll.cpuChecks} in fp64 on the CPU`,
      },
      metricsOn: 'cpu',
      floorFrom:
        "the engine's Llama reference path at each run's storage precision, its local error at the same op",
      runs: sources,
      curves,
      checks,
      ...verdictOf(sources, checks, curves, k, tokens.length),
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
      (j, i) => ({ exact: fedAll.own[j][i], kept: fedAll.kept[j][i] }),
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
    // The family's choice (a CPU adapter takes the CPU unless asked; the df self-test and the family's tiny model).
    oracle: async (choice) => {
      const pool = new BufferPool(engine.devicePipelines().device);
      try {
        const info = await familyOracle(engine, choice, pool);
        const gpu = info.kind === 'gpu' ? gpuRerunOf(engine, pool, info.dfFma) : null;
        return {
          info: {
            kind: info.kind,
            reason:
              info.kind === 'gpu'
                ? `${info.reason}: each check re-run in double-float on the GPU by the registry's df forms`
                : info.reason,
            selfTest: info.selfTest,
          },
          gpu,
          release: () => pool.destroyAll(),
        };
      } catch (e) {
        pool.destroyAll();
        throw e;
      }
    },
  };
}
