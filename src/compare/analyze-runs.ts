// The analysis of runs made elsewhere (docs/RUNS.md): one or two run files of the loaded model on the same tokens,
// as a pipeline of named phases — sources (the files' tensors uploaded, the engine's reference path as the floor's
// run), oracle (the exact forward, and each op re-run exactly from every run's own recorded inputs), comparisons
// (reduced on the GPU in one submit) and verdict (the first op whose local error passes k × its floor, in words).
//
// An op's floor is the local error of the engine's fp32 reference kernel at the same op, measured the same way (the
// reference path is a run too), never below one rounding of the run's storage precision. The oracle takes Hugging
// Face's fp32 rotary angles (kernels/cpu/rotary-angles.ts): that is how the runs were made.
//
// With `rows` only the rows from..T−1 are checked (a decode check: its prompt rows are the two-path compare's):
// every comparison, floor, metric and per-op re-run covers those rows only; the exact forward and attention still
// read every position's keys and values. The report and its sentences say which rows were left to whom.
import type { BatchForward, GpuTap } from '../engine/batch';
import type { Engine } from '../engine/engine';
import { type DfBuffer, readDf, uploadDf } from '../engine/oracle-df';
import { oracleForward } from '../kernels/cpu/forward';
import { checkSameTokens } from '../model/run-file';
import type { Precision } from '../numeric/precision';
import type { DType } from '../numeric/types';
import { DEFAULT_K } from '../run/runspec';
import { AnalysisCancelled, metricsEngine } from './analyze';
import { needsScale } from './floor';
import { JobList, type Side } from './jobs';
import type { FullMetrics } from './metrics';
import { type MissingCheck, type OpCheck, runChecks } from './run-checks';
import { cpuExact, exactWhole } from './run-exact';
import { checkedRowsWords, rowsOf } from './run-rows';
import { tapRows, uploadRun } from './run-sources';
import type { AnalyzeRunsOptions, RunInput } from './runs-input';
import { RUNS_REPORT_SCHEMA, type RunsReport, verdictOf } from './runs-report';
import { HF_ANGLES, type RunsStart, startFits, startRunsAnalysis } from './runs-start';
import { checkResults, curveResults } from './runs-verdict';
import { explainRunFindings } from './why-runs';

export type { AnalyzeRunsOptions, RunInput };

const PRECISION: Record<DType, Precision> = { F32: 'fp32', F16: 'fp16', BF16: 'bf16' };

/** A run as the comparisons see it: its slots as f32 tensors on the GPU. */
interface GpuRun {
  id: string;
  /** The checked rows of each slot. */
  slots: Map<string, GpuTap>;
  /** Every row of the slots an op reads whole (attention, the whole layer), or of all. */
  full: Map<string, GpuTap>;
  precision: Precision;
  checks: OpCheck[];
  missing: MissingCheck[];
  names: (slot: string) => string;
  /** The slots on the CPU (the CPU oracle's route only). */
  cpu: Map<string, Float32Array> | null;
}

/** The engine's taps under the run-file slots (resid_mid is the sequential style's ln2_in). */
function engineSlots(run: BatchForward): Map<string, GpuTap> {
  const slots = new Map<string, GpuTap>();
  for (const [name, tap] of run.taps) slots.set(name.replace(/\.resid_mid$/, '.ln2_in'), tap);
  return slots;
}

/**
 * Runs the analysis of run A (and B, against A) on the engine's loaded model. `start`: its first steps, started
 * from the tokens before the runs were whole (startRunsAnalysis, with the same options); else they run here.
 */
export async function analyzeRuns(
  engine: Engine,
  a: RunInput,
  b: RunInput | null,
  opts: AnalyzeRunsOptions = {},
  start?: Promise<RunsStart>,
): Promise<RunsReport> {
  if (!engine.modelInfo || !engine.gpuParts().model) {
    start?.then(
      (s) => s.release(),
      () => undefined,
    );
    throw new Error('no model is loaded');
  }
  const tokens = a.file.tokens;
  const from = opts.rows?.from ?? 0;
  const angles = opts.angles ?? HF_ANGLES;
  const s = await (start ?? startRunsAnalysis(engine, tokens, opts));
  try {
    if (b) checkSameTokens(a.file, b.file);
    if (!startFits(s, tokens, from, angles))
      throw new Error('the analysis was started on other tokens, rows or angles than its runs have');
    return await analyzeStarted(engine, s, a, b, opts);
  } finally {
    s.release();
  }
}

/** The analysis after its first steps (`s`, of the runs' tokens). */
async function analyzeStarted(
  engine: Engine,
  s: RunsStart,
  a: RunInput,
  b: RunInput | null,
  opts: AnalyzeRunsOptions,
): Promise<RunsReport> {
  const info = engine.modelInfo!;
  const cfg = info.config;
  const tokens = a.file.tokens;
  const T = tokens.length;
  const { from, angles, gpuOracle, oracleInfo, refBatch, ref, refDone, batch } = s;
  const R = T - from;
  const k = opts.k ?? DEFAULT_K;
  const metric = opts.metric ?? 'relL2';
  const durations: Record<string, number> = { start: s.ms };
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
  // Slots on the GPU are read back only where the CPU reads them.
  const load = () => Promise.all(inputs.map((r) => r.resident?.load()));
  if (!gpuOracle) await load();
  let refCpu: Map<string, Float32Array> | null = null;
  if (!gpuOracle) {
    await refDone;
    refCpu = new Map();
    for (const [slot, tap] of engineSlots(ref)) refCpu.set(slot, await refBatch.read(tap, T));
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

  const runs = await phase('sources', () => {
    const lmHead = a.file.slots.get('logits')?.name.startsWith('lm_head') ? 'lm_head' : 'embed_out';
    const checksOf = (has: (s: string) => boolean, wholeLayers?: ReadonlySet<number>) =>
      runChecks(cfg, has, lmHead, wholeLayers);
    const files = inputs.map((r, j): GpuRun => {
      const { checks, missing } = checksOf((s) => r.file.slots.has(s));
      const whole = new Set(
        checks.filter((c) => c.op === 'attention' || c.op === 'layer').flatMap((c) => c.inputs),
      );
      const parts = forward.get('logits')?.parts;
      const up = uploadRun(batch, r.file, parts, from, whole, gpuOracle ? r.resident?.slots : undefined);
      return {
        id: j === 0 ? 'A' : 'B',
        slots: up.rows,
        full: up.full,
        precision: PRECISION[r.file.storage],
        checks,
        missing,
        names: (s) => up.rows.get(s)?.name ?? s,
        cpu: gpuOracle ? null : new Map([...r.file.slots].map(([s, t]) => [s, t.data])),
      };
    });
    // The floors' run checks every op the files' runs check, whole layers included.
    const wholeLayers = new Set(
      files.flatMap((f) => f.checks.filter((c) => c.op === 'layer').map((c) => c.layer!)),
    );
    const full = engineSlots(ref);
    const { checks, missing } = checksOf((s) => full.has(s), wholeLayers);
    // The checked rows of what is compared: the checks' outputs and the curves' slots.
    const used = new Set(['embed', ...layerOuts, 'final_norm', 'logits', ...checks.map((c) => c.output)]);
    const slots = new Map(
      [...full].filter(([s]) => used.has(s)).map(([s, t]) => [s, tapRows(batch, t, T, from)]),
    );
    const names = (s: string) => full.get(s)?.name ?? s;
    const reference: GpuRun = {
      id: 'reference',
      slots,
      full,
      precision: 'fp32',
      checks,
      missing,
      names,
      cpu: refCpu,
    };
    return { ref: reference, files };
  });

  // The exact output of every check of every run (the reference path's own checks are the floors).
  const exact = await phase('oracle', () => {
    const all = [runs.ref, ...runs.files];
    return all.map((run) => {
      // Each run's checks handed to the GPU as soon as they are recorded (it works while the next are).
      if (gpuOracle) batch.flush();
      return run.checks.map((c): DfBuffer => {
        if (gpuOracle) {
          // Every row where the run has it (opOn takes either), else the checked rows.
          const inputs = c.inputs.map((s) => {
            const t = run.full.get(s) ?? run.slots.get(s)!;
            return { buffer: t.buffer, n: t.floats };
          });
          const one = gpuOracle.opOn(
            batch.encoder,
            { op: c.op, layer: c.layer, inputs, label: `${run.id}:${c.id}` },
            tokens,
            from,
          );
          batch.onRelease(() => one.release());
          return one.taps.get('out')!;
        }
        return cpuExact(engine, batch, c, tokens, (s) => run.cpu!.get(s)!, from, angles);
      });
    });
  });

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
    const pending = jobs.record(metrics, batch.encoder);
    batch.onRelease(() => pending.release());
    await refDone;
    await batch.submit();
    const out = (await pending.read()).compare;
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
      ...verdictOf(sources, checks, curves, k),
      durations,
    };
    return report;
  });
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
  return report;
}
