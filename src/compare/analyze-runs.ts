// The analysis of runs made elsewhere (docs/RUNS.md): one or two run files of the loaded model on the same tokens,
// as a pipeline of named phases — sources (the files' tensors uploaded, the engine's reference path as the floor's
// run), oracle (the exact forward, and each op re-run exactly from every run's own recorded inputs), comparisons
// (reduced on the GPU in one submit) and verdict (the first op whose local error passes k × its floor, in words).
// The first two start while the files are read (streamRuns): on the first header's tokens, and slot by slot.
//
// An op's floor is the local error of the engine's fp32 reference kernel at the same op, measured the same way (the
// reference path is a run too), never below one rounding of the run's storage precision. The oracle takes Hugging
// Face's fp32 rotary angles (kernels/cpu/rotary-angles.ts): that is how the runs were made.
//
// With `rows` only the rows from..T−1 are checked (a decode check: its prompt rows are the two-path compare's):
// every comparison, floor, metric and per-op re-run covers those rows only; the exact forward and attention still
// read every position's keys and values. The report and its sentences say which rows were left to whom.
import type { GpuTap } from '../engine/batch';
import type { Engine } from '../engine/engine';
import { type DfBuffer, readDf, uploadDf } from '../engine/oracle-df';
import { oracleForward } from '../kernels/cpu/forward';
import { checkSameTokens, type ReadRunOptions } from '../model/run-file';
import { type PartedPair, partedPair } from '../model/run-generation';
import type { NeoXConfig } from '../numeric/types';
import { DEFAULT_K } from '../run/runspec';
import { AnalysisCancelled, metricsEngine } from './analyze';
import { needsScale } from './floor';
import { JobList, type Side } from './jobs';
import type { FullMetrics } from './metrics';
import { cpuExact, exactWhole } from './run-exact';
import { checkedRowsWords, rowsOf, runRows } from './run-rows';
import { engineSlots, type FeedProgress, RunsFeed } from './runs-feed';
import type { AnalyzeRunsOptions, RunInput } from './runs-input';
import { RUNS_REPORT_SCHEMA, type RunsReport, verdictOf } from './runs-report';
import { HF_ANGLES, type RunsStart, startFits, startRunsAnalysis } from './runs-start';
import { checkResults, curveResults, heldRows, partingOfReport } from './runs-verdict';
import { explainRunFindings } from './why-runs';

export type { AnalyzeRunsOptions, RunInput };

/** An analysis fed as its run files are read (streamRuns). */
export interface RunsStream {
  /** What run j's reader calls (readRunFile's onHeader and onSlot): run 0 is A, run 1 is B. */
  reader(j: number): Required<Pick<ReadRunOptions, 'onHeader' | 'onSlot'>>;
  /** The report, once the runs are whole (a run no reader fed is taken whole here); its buffers are then back. */
  report(a: RunInput, b: RunInput | null): Promise<RunsReport>;
  /** The buffers back (settles once they are) where no report will be asked for: a refused file, a stopped read. */
  release(): Promise<void>;
  /** What the analysis has taken up so far (nothing until its first steps are done). */
  progress(): FeedProgress;
}

/**
 * The analysis of `count` runs (1 or 2) fed as they are read: its first steps start on the first header's tokens
 * (runs-start.ts), and each slot is uploaded, and each check whose inputs are in is re-run exactly, while the rest
 * of the files is still being read (runs-feed.ts). `engine` may be on its way (the CLI reads while it loads).
 * `start`: first steps already started (with the same options).
 */
export function streamRuns(
  engine: Engine | Promise<Engine>,
  count: number,
  opts: AnalyzeRunsOptions = {},
  start?: Promise<RunsStart>,
): RunsStream {
  let feed: RunsFeed | null = null;
  // Arrivals wait here for the first steps, then for the reader's next wait on the disk: the feed's work runs while
  // a read is in flight, not in the middle of decoding (report() takes what is left at once).
  let queue: ((feed: RunsFeed) => void)[] = [];
  let soon = false;
  let released: Promise<void> | null = null;
  const drain = () => {
    soon = false;
    const q = queue;
    queue = [];
    if (!released) for (const f of q) f(feed!);
  };
  const fedRuns = new Set<number>();
  const begin = (tokens: readonly number[]) => {
    if (start) return start;
    start = Promise.resolve(engine).then((e) => startRunsAnalysis(e, tokens, opts));
    start.catch(() => undefined); // awaited by report(); an error then, not an unhandled rejection now
    return start;
  };
  const feedOf = (s: RunsStart, cfg: NeoXConfig) => {
    if (!feed) {
      feed = new RunsFeed(cfg, s, count, opts.signal);
      drain();
    }
    return feed;
  };
  const later = (f: (feed: RunsFeed) => void) => {
    queue.push(f);
    if (feed && !soon) {
      soon = true;
      setTimeout(() => feed && drain(), 0);
    }
  };
  const release = () => {
    released ??= (start ?? Promise.resolve(null)).then(
      (s) => s?.release(),
      () => undefined,
    );
    return released;
  };
  return {
    reader: (j) => ({
      onHeader(h) {
        fedRuns.add(j);
        Promise.all([begin(h.tokens), engine]).then(
          ([s, e]) => e.modelInfo && feedOf(s, e.modelInfo.config),
          () => undefined,
        );
        later((f) => f.header(j, h));
      },
      onSlot(slot, t) {
        later((f) => f.tensor(j, slot, { name: t.name, data: t.data }));
      },
    }),
    async report(a, b) {
      try {
        const e = await engine;
        if (!e.modelInfo || !e.gpuParts().model) throw new Error('no model is loaded');
        if (b) checkSameTokens(a.file, b.file);
        // Two generations whose texts part: compared on the rows they share, in an analysis of those rows (the one
        // started on A's tokens is let go).
        const parted = b ? partedPair(a.file, b.file) : null;
        if (b && parted && (parted.rows < a.file.tokens.length || parted.rows < b.file.tokens.length)) {
          await release();
          await Promise.all([a, b].map((r) => r.resident?.load()));
          const cut = (r: RunInput): RunInput => ({ file: runRows(r.file, parted.rows), sha256: r.sha256 });
          const report = await analyzeRuns(e, cut(a), cut(b), opts);
          heldRows(report, { A: a.file.tokens.length, B: b.file.tokens.length });
          return report;
        }
        const s = await begin(a.file.tokens);
        const from = opts.rows?.from ?? 0;
        if (!startFits(s, a.file.tokens, from, opts.angles ?? HF_ANGLES))
          throw new Error('the analysis was started on other tokens, rows or angles than its runs have');
        const inputs = [a, b].filter((r): r is RunInput => r !== null);
        // Slots on the GPU are read back only where the CPU reads them.
        if (!s.gpuOracle) await Promise.all(inputs.map((r) => r.resident?.load()));
        const f = feedOf(s, e.modelInfo.config);
        drain();
        // A run no reader fed: fed whole now.
        for (const [j, r] of inputs.entries()) {
          if (fedRuns.has(j)) continue;
          const slots = new Map(
            [...r.file.slots].map(([slot, t]) => [slot, { name: t.name, dtype: t.dtype }]),
          );
          f.header(j, { tokens: r.file.tokens, slots });
          const onGpu = s.gpuOracle ? r.resident?.slots : undefined;
          for (const [slot, t] of r.file.slots) {
            const tap = onGpu?.get(slot);
            f.tensor(j, slot, tap ? { onGpu: tap } : { name: t.name, data: t.data });
          }
        }
        return await analyzeStarted(e, s, f, a, b, opts, parted);
      } finally {
        await release();
      }
    },
    release,
    progress: () => feed?.progress() ?? { slots: 0, reruns: Array(count).fill(0), floors: 0 },
  };
}

/**
 * Runs the analysis of run A (and B, against A) on the engine's loaded model. `start`: its first steps, started
 * from the tokens before the runs were whole (startRunsAnalysis, with the same options); else they run here.
 */
export function analyzeRuns(
  engine: Engine,
  a: RunInput,
  b: RunInput | null,
  opts: AnalyzeRunsOptions = {},
  start?: Promise<RunsStart>,
): Promise<RunsReport> {
  return streamRuns(engine, b ? 2 : 1, opts, start).report(a, b);
}

/** The analysis after its first steps (`s`, of the runs' tokens) with every run fed to `feed`. */
async function analyzeStarted(
  engine: Engine,
  s: RunsStart,
  feed: RunsFeed,
  a: RunInput,
  b: RunInput | null,
  opts: AnalyzeRunsOptions,
  parted: PartedPair | null,
): Promise<RunsReport> {
  const info = engine.modelInfo!;
  const cfg = info.config;
  const tokens = a.file.tokens;
  const T = tokens.length;
  const { from, angles, gpuOracle, oracleInfo, refBatch, ref, refDone, batch } = s;
  const R = T - from;
  const k = opts.k ?? DEFAULT_K;
  const metric = opts.metric ?? 'relL2';
  // The feed's time is the reading thread's, spent while the files were read.
  const durations: Record<string, number> = { start: s.ms, ...feed.ms };
  const phases = ['sources', 'oracle', 'comparisons', 'verdict', 'why'];
  const phase = async <R>(name: string, f: () => Promise<R> | R): Promise<R> => {
    if (opts.signal?.aborted) throw new AnalysisCancelled('analysis cancelled');
    opts.onProgress?.(name, phases.indexOf(name), phases.length);
    const t0 = performance.now();
    const r = await f();
    durations[name] = (durations[name] ?? 0) + performance.now() - t0;
    return r;
  };
  const { on: metricsOn, m: metrics } = metricsEngine(engine, opts.metrics ?? 'auto');
  const { device, pipelines, pool } = engine.gpuParts();
  const layerOuts = Array.from({ length: cfg.numLayers }, (_, i) => `layers.${i}.out`);
  const inputs = [a, b].filter((r): r is RunInput => r !== null);
  const load = () => Promise.all(inputs.map((r) => r.resident?.load()));

  const runs = await phase('sources', () => {
    const fed = feed.done();
    if (!gpuOracle) for (const [j, r] of inputs.entries()) fed.files[j].cpu = slotData(r);
    return fed;
  });
  if (!gpuOracle) {
    await refDone;
    runs.ref.cpu = new Map();
    for (const [slot, tap] of engineSlots(ref)) runs.ref.cpu.set(slot, await refBatch.read(tap, T));
  }

  // The exact forward: started on the GPU oracle; the CPU oracle's here.
  const forward =
    s.forward ??
    (await phase('oracle', () => {
      const taps = new Map<string, Float64Array>();
      oracleForward(cfg, engine.weights!, tokens, taps, { angles });
      const up = new Map<string, DfBuffer>();
      for (const name of ['embed', 'final_norm', 'logits', ...layerOuts]) {
        const all = taps.get(name);
        if (!all) continue;
        const v = rowsOf(all, T, from);
        const buffer = uploadDf(device, v);
        batch.onRelease(() => buffer.destroy());
        up.set(name, { buffer, n: v.length });
      }
      return up;
    }));

  // The exact output of every check of every run (the reference path's own checks are the floors): the GPU
  // oracle's recorded by the feed as the inputs arrived; the CPU oracle's here.
  const exact = gpuOracle
    ? runs.exact
    : await phase('oracle', () =>
        [runs.ref, ...runs.files].map((run) =>
          run.checks.map((c) => cpuExact(engine, batch, c, tokens, (sl) => run.cpu!.get(sl)!, from, angles)),
        ),
      );

  const results = await phase('comparisons', async () => {
    const jobs = new JobList(R, 'fp32');
    const f32 = (t: GpuTap): Side => ({ f32: t });
    const zero = needsScale(metric)
      ? batch.buffer(R * Math.max(cfg.hiddenSize * 4, cfg.vocabSize) * 4, 'zero')
      : null;
    const scaleJob = (t: GpuTap) =>
      zero ? jobs.compare(f32(t), { zero, floats: t.floats }, `${t.name} scale`) : -1;
    const layerSlots = ['embed', ...layerOuts, 'final_norm', 'logits'];
    const curves = layerSlots.map((slot) => {
      const o = forward.get(slot);
      const refTap = runs.ref.slots.get(slot)!;
      if (!o) return null;
      return {
        slot,
        floor: jobs.compare(f32(refTap), { df: o }, `${slot} floor`),
        scale: scaleJob(refTap),
        runs: runs.files.map((r) =>
          r.slots.has(slot) ? jobs.compare(f32(r.slots.get(slot)!), { df: o }, `${r.id} ${slot}`) : -1,
        ),
        bVsA:
          runs.files.length === 2 && runs.files.every((r) => r.slots.has(slot))
            ? jobs.compare(
                f32(runs.files[1].slots.get(slot)!),
                f32(runs.files[0].slots.get(slot)!),
                `B vs A ${slot}`,
              )
            : -1,
      };
    });
    const checkJobs = [runs.ref, ...runs.files].map((run, j) =>
      run.checks.map((c, i) => ({
        err: jobs.compare(f32(run.slots.get(c.output)!), { df: exact[j][i] }, `${run.id} ${c.id}`, {
          perRow: true,
        }),
        scale: scaleJob(run.slots.get(c.output)!),
      })),
    );
    // Its parts timed apart (recording, the GPU's work still queued, the readback): what bounds the phase.
    const t0 = performance.now();
    const pending = jobs.record(metrics, batch.encoder);
    batch.onRelease(() => pending.release());
    const t1 = performance.now();
    await refDone;
    await batch.submit();
    const t2 = performance.now();
    const out = (await pending.read()).compare;
    Object.assign(durations, {
      'comparisons.record': t1 - t0,
      'comparisons.gpu': t2 - t1,
      'comparisons.read': performance.now() - t2,
    });
    return {
      curves,
      checkJobs,
      got: (j: number): FullMetrics => out[j].metrics,
      rows: (j: number) => out[j].perRow,
    };
  });

  const report = await phase('verdict', () => {
    const checks = checkResults(runs.files, runs.ref, results, metric, k, from);
    const curves = curveResults(runs.files, results, metric, k);
    const sources = [a, b]
      .filter((r): r is RunInput => r !== null)
      .map((r, j) => {
        const run = runs.files[j];
        return {
          id: run.id,
          file: r.file.file,
          sha256: r.sha256,
          label: r.file.label,
          device: r.file.device,
          dtype: r.file.dtype,
          storage: r.file.storage,
          tensors: r.file.slots.size,
          ignored: r.file.ignored,
          handoffs: r.file.handoffs,
          checks: run.checks.length,
          missing: run.missing,
          generation: r.file.generation ?? null,
        };
      });
    const report: RunsReport = {
      schema: RUNS_REPORT_SCHEMA,
      createdAt: new Date().toISOString(),
      model: { name: info.name, config: cfg },
      adapter: engine.adapter,
      tokens,
      metric,
      k,
      oracle: { kind: oracleInfo.kind, reason: oracleInfo.reason, selfTest: oracleInfo.selfTest },
      metricsOn,
      floorFrom: 'the engine reference path (fp32), its local error at the same op',
      runs: sources,
      curves,
      checks,
      ...verdictOf(sources, checks, curves, k, tokens.length),
      durations,
    };
    return report;
  });
  if (parted && b) {
    // The exact logits (of the checked rows from..T−1) hold the row whose choice parts the texts.
    const lg = forward.get('logits');
    const exact = lg ? { data: await readDf(device, lg), from } : null;
    report.parting = partingOfReport(parted, a.file, b.file, exact, report, runs.files);
  }
  const whyRuns = runs.files.map((run, j) => {
    const file = (j === 0 ? a : b!).file;
    // The born op's exact output over every row (its anatomy and causes are read on the whole op): the checked
    // rows' output as it is, else the op once more on all rows.
    const whole = (i: number) =>
      from === 0
        ? readDf(device, exact[j + 1][i], T)
        : exactWhole(engine, gpuOracle, file, run.checks[i], `${run.id}:${run.checks[i].id}`, angles);
    return { id: run.id, file, precision: run.precision, checks: run.checks, exact: whole };
  });
  const products = gpuOracle
    ? { device, pipelines, pool, dfFma: oracleInfo.dfFma, maxBindingBytes: engine.maxBindingBytes }
    : null;
  await phase('why', async () => {
    if (report.findings.some((f) => f.diverged)) await load();
    await explainRunFindings(engine, report, whyRuns, angles, products);
  });
  if (opts.rows && from > 0) {
    const rows = opts.rows;
    report.rows = { from, note: rows.note };
    for (const [j, f] of report.findings.entries())
      f.sentence = f.sentence.replace(/\.$/, ` (${checkedRowsWords(rows, T, report.runs[j].generation)}).`);
    report.sentence = report.findings.map((f) => f.sentence).join(' ');
  }
  if (report.parting) report.sentence = `${report.sentence} ${report.parting.words}`;
  return report;
}

/** A run's slots on the CPU (the CPU oracle's route). */
function slotData(r: RunInput): Map<string, Float32Array> {
  return new Map([...r.file.slots].map(([s, t]) => [s, t.data]));
}
