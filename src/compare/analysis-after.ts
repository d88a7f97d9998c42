// The phases after the verdict (analyze.ts runs them in order): bisection (each enabled fused kernel alone, with the
// faults it carries, in one submit), determinism (the fused path again, bit for bit, under two schedules), and greedy
// generation on both paths (KV cache), streamed token by token.
import type { RecordedDecode } from '../engine/decode-record';
import type { Engine } from '../engine/engine';
import type { FusedKernelId } from '../engine/fused-kernels';
import type { PlanHooks } from '../engine/plan';
import type { GenerateOptions } from '../engine/types';
import { storageUnitRoundoff } from '../numeric/precision';
import { faultHooks, faultInfo, type PlantedFault } from '../run/faults';
import { type AnalysisContext, dumpName, type EngineRuns, f32, type Measured } from './analysis-phases';
import { decodeOpsOf } from './decode-ops';
import { type DecodeCheck, decodeCheckOf, decodeRows, decodeRunInput, vsFullOf } from './decode-run-file';
import { nonFiniteIn, ratioOf } from './floor';
import { cachedVsFull, generationVerdictOf, generationWords } from './generation-verdict';
import { JobList } from './jobs';
import { metricValue } from './metrics';
import { type PartingRows, partingOf } from './parting';
import type {
  AnalysisPartial,
  BisectionRow,
  DeterminismResult,
  GenerationResult,
  OracleInfo,
  Report,
} from './report';
import { checkedRowsWords } from './run-rows';
import type { AnalyzeRunsOptions } from './runs-input';
import { causeClause } from './why-runs';

export async function bisect(
  c: AnalysisContext,
  runs: EngineRuns,
  report: Report,
  m: Measured,
): Promise<BisectionRow[]> {
  const { precision, metric, k } = c.spec;
  const b = c.newBatch();
  const rows = c.spec.fused.map((kernel) => ({
    kernel,
    run: b.forward(c.tokens, {
      path: new Set([kernel]),
      precision,
      hooks: restrictHooks(c.planted, kernel),
      taps: 'dump',
    }),
  }));
  const jobs = new JobList(c.tokens.length, precision);
  const idx = rows.map(({ run }) =>
    report.layers.map((_, i) =>
      jobs.compare(f32(run, dumpName(i)), f32(runs.ref, dumpName(i)), `bisection ${i}`),
    ),
  );
  const p = jobs.record(c.metrics, b.encoder);
  b.onRelease(() => p.release());
  await b.submit();
  const r = (await p.read()).compare;
  return rows.map(({ kernel }, j): BisectionRow => {
    let firstLayer: number | null = null;
    let worst = { value: 0, ratio: 0 };
    idx[j].forEach((jobIndex, i) => {
      const got = r[jobIndex].metrics;
      const ratio = ratioOf(got, report.layers[i].floor, metric, precision, m.scaleOf(m.perLayer[i].scale));
      const hit = ratio > k || nonFiniteIn(got) > 0;
      if (hit && firstLayer === null) {
        firstLayer = i;
        worst = { value: metricValue(got, metric), ratio };
      } else if (firstLayer === null && ratio > worst.ratio)
        worst = { value: metricValue(got, metric), ratio };
    });
    return { kernel, reproduces: firstLayer !== null, firstLayer, ...worst };
  });
}

/**
 * The fused path again, bit for bit, compared on the GPU — once as it was, once with another flash-attention
 * query-tile shape. A correct kernel gives identical bits either way (every output row is computed by the same
 * arithmetic whatever tile it falls in); a race shows up in one of the two even on an emulator whose scheduling is
 * itself deterministic.
 */
export async function determinismOf(c: AnalysisContext, runs: EngineRuns): Promise<DeterminismResult> {
  const b = c.newBatch();
  const schedules: [string, PlanHooks][] = [
    ['repeat', c.hooks],
    ['query tile 8', withConstants(c.hooks, 'flash_attention', { BQ: 8 })],
  ];
  const names = [...runs.fused.taps.keys()];
  const jobs = new JobList(c.tokens.length, c.spec.precision);
  const idx = schedules.map(([, hooks]) => {
    const again = b.forward(c.tokens, { path: c.fusedSet, precision: c.spec.precision, hooks, taps: c.taps });
    return names.map((name) => jobs.bitDiff(runs.fused.taps.get(name)!, again.taps.get(name)!));
  });
  const p = jobs.record(c.metrics, b.encoder);
  b.onRelease(() => p.release());
  await b.submit();
  const r = (await p.read()).bitDiff;
  const differences: DeterminismResult['differences'] = [];
  const results = schedules.map(([schedule], s) => {
    const found = names.flatMap((name, j) => {
      const d = r[idx[s][j]];
      return d.count > 0 ? [{ tensor: name, count: d.count, firstIndex: d.firstIndex, schedule }] : [];
    });
    differences.push(...found);
    return { schedule, identical: found.length === 0 };
  });
  return { identical: differences.length === 0, differences, runs: results };
}

/**
 * Greedy generation on both paths (KV cache) together: one token of each path per step, several steps per submit,
 * each step's pair handed out as it is read back (Engine.generatePaths). Then what the text says
 * (generation-verdict.ts): where the texts part and why (parting.ts), each path's cached decode against its uncached
 * forward, and — asked for, or by itself where the generation diverges — each path's decode checked op by op.
 */
export async function generate(
  c: AnalysisContext,
  onPartial: ((p: AnalysisPartial) => void) | undefined,
  signal: AbortSignal | undefined,
  oracle: Pick<OracleInfo, 'kind'> & { dfFma: boolean },
  promptRows?: PartingRows,
  prefix: DecodePrefix | null = null,
  logitsFloor = 0,
  /** The prompt agrees: where it does not, the prompt's checks already name the op, and only an error of the
   * decode path itself (a cached decode off its uncached forward) starts the decode check. */
  promptAgrees = true,
): Promise<GenerationResult> {
  const { engine, spec, tokens } = c;
  const n = spec.generate;
  const text = (ids: number[]) => engine.tokenizer?.decode(ids) ?? null;
  const got: [number[], number[]] = [[], []];
  const asked = c.checkDecode !== undefined && c.decodeCheck === 'asked';
  const recorded: RecordedDecode[] = [];
  const paths = ['reference', 'fused'] as const;
  const options = [
    { path: 'reference' as const, precision: spec.precision },
    { path: c.fusedSet, precision: spec.precision, hooks: c.hooks },
  ];
  const tg = performance.now();
  try {
    const stepLogits: Float32Array[] = [];
    const [refIds, fusedIds] = await engine.generatePaths(
      tokens,
      n,
      options,
      (_step, ids) => {
        paths.forEach((path, i) => {
          got[i].push(ids[i]);
          onPartial?.({ kind: 'token', path, ids: [...got[i]], text: text(got[i]), total: n });
        });
      },
      signal,
      // Two steps per read-back: tokens stream to the page while the next steps already run.
      { chunk: 2, recorded: asked ? recorded : undefined, logits: n > 1 ? stepLogits : undefined },
    );
    c.durations['generation.paths'] = performance.now() - tg;
    const ids = [refIds, fusedIds];
    const first = refIds.findIndex((id, i) => fusedIds[i] !== id);
    // Why they part: both paths and the oracle at the row that chose the first differing id.
    const parting = first < 0 ? null : await partingOf(c, oracle, refIds, fusedIds, first, promptRows);
    // Each cached decode against its own uncached forward over the same tokens, on the decode steps' rows.
    const tc = performance.now();
    const full =
      n > 1
        ? await uncachedLogits(
            engine,
            ids.map((x) => [...tokens, ...x.slice(0, -1)]),
            options,
            tokens.length,
          )
        : null;
    const V = engine.modelInfo!.config.vocabSize;
    const floor = logitsFloor > 0 ? logitsFloor : storageUnitRoundoff(spec.precision);
    const cached = full
      ? paths.map((path, i) => cachedVsFull(path, stepLogits[i], full[i], V, floor, spec.k))
      : undefined;
    c.durations['generation.cached'] = performance.now() - tc;
    const g: GenerationResult = {
      reference: { ids: refIds, text: text(refIds) },
      fused: { ids: fusedIds, text: text(fusedIds) },
      firstDifference: first < 0 ? null : first,
      parting,
      ...(cached ? { cached } : {}),
    };
    // The decode check: asked for (its decode recorded above), or by itself where the text diverges (the
    // generation again, recorded: the same ids, the op named without a checkbox).
    const decodeOff = g.parting?.kind === 'decode' || (cached ?? []).some((x) => !x.within);
    const auto =
      !asked &&
      c.checkDecode !== undefined &&
      (promptAgrees ? generationVerdictOf(g) === 'diverged' : decodeOff);
    if (asked || auto) {
      if (auto) {
        c.onProgress?.('decode check');
        const again = await engine.generatePaths(tokens, n, options, undefined, signal, {
          chunk: 4,
          recorded,
        });
        ids.splice(0, 2, ...again);
      }
      g.decode = await checkDecodes(c, recorded, ids, oracle, prefix, full);
      g.decodeStarted = asked ? 'asked' : 'auto';
    }
    g.verdict = generationVerdictOf(g);
    g.words = generationWords(g, tokens.length);
    return g;
  } finally {
    // The recorded decodes' GPU buffers (the checks are done with them, or the generation failed).
    for (const r of recorded) r.release();
  }
}

/** The compare's exact forward over the prompt, each layer's QKV projection (AnalyzeRunsOptions.prefix). */
export type DecodePrefix = NonNullable<AnalyzeRunsOptions['prefix']>;

/**
 * Each path's recorded decode checked as a run of a generation, against the exact forward of its own tokens: where
 * both paths generated the same tokens, in one analysis as runs A and B (one exact forward, one set of floors). The
 * recorded taps stay on the GPU where the oracle is (decodeRunInput).
 */
async function checkDecodes(
  c: AnalysisContext,
  recorded: RecordedDecode[],
  ids: number[][],
  o: Pick<OracleInfo, 'kind'> & { dfFma: boolean },
  prefix: DecodePrefix | null,
  /** Each path's uncached logits of the decode steps' rows, where the generation phase has them already. */
  uncached: Float32Array[] | null = null,
): Promise<DecodeCheck[]> {
  const { spec, tokens } = c;
  const oracle = o.kind;
  const names = ['reference', 'fused'] as const;
  const paths = [
    { path: 'reference' as const, precision: spec.precision },
    { path: c.fusedSet, precision: spec.precision, hooks: c.hooks },
  ];
  const t0 = performance.now();
  const runs = await Promise.all(
    names.map((path, i) =>
      decodeRunInput(recorded[i], tokens, ids[i], `${path} path decode`, spec.precision, oracle === 'gpu'),
    ),
  );
  // The decode steps' rows only: the prompt's rows are this compare's own (one generated token: no step's row,
  // every row checked).
  const rows = runs[0].file.tokens.length > tokens.length ? decodeRows(tokens.length) : undefined;
  // Our decode is checked against the exact model (the compare's angles), and where the compare's exact forward
  // is on the GPU, the decode rows' exact forward starts from its keys and values (forwardFrom).
  const opts = {
    k: spec.k,
    metric: spec.metric,
    oracle,
    metrics: c.metricsOn,
    rows,
    angles: 'exact' as const,
    ...(rows && prefix ? { prefix } : {}),
  };
  const same = runs[0].file.tokens.every((id, t) => runs[1].file.tokens[t] === id);
  // The cached path against its own whole forward over the same tokens (the decode's oracle), on the checked rows:
  // submitted first, so that the GPU runs those forwards while the CPU records the analyses.
  const from = rows?.from ?? 0;
  const full =
    uncached && rows
      ? Promise.resolve(uncached)
      : uncachedLogits(
          c.engine,
          runs.map((r) => r.file.tokens),
          paths,
          from,
        );
  full.catch(() => undefined); // awaited below
  const reports = same
    ? [await c.checkDecode!(runs[0], opts, runs[1])]
    : [await c.checkDecode!(runs[0], opts), await c.checkDecode!(runs[1], opts)];
  const t1 = performance.now();
  c.durations['decode.analysis'] = t1 - t0;
  const logits = await full;
  const out: DecodeCheck[] = [];
  for (const [i, path] of names.entries()) {
    const report = same ? reports[0] : reports[i];
    const floor = report.curves.find((x) => x.slot === 'logits')?.floorValue ?? 0;
    const mine = (await recorded[i].read(from, ['logits'])).get('logits') ?? new Float32Array(0);
    const vsFull = vsFullOf(mine, logits[i], floor, spec.k);
    const run = same && i === 1 ? 'B' : 'A';
    const check = { ...decodeCheckOf(path, report, tokens.length, run), vsFull };
    // Born in a layer checked only whole (the fused path's kernels join ops without a tap between them): its ops
    // one by one on the decode rows, against the reference path's decode (decode-ops.ts).
    const b = check.born;
    if (i === 1 && b && b.layer !== null && /\.layer$/.test(b.check) && rows) {
      const t2 = performance.now();
      const ops = await decodeOpsOf(
        c.engine,
        recorded[1],
        runs[1].file.tokens,
        recorded[0],
        runs[0].file.tokens,
        b.layer,
        rows.from,
        {
          ...spec,
          // The born op's variants multiplied on the GPU oracle where the analysis runs it there.
          products:
            oracle === 'gpu'
              ? { ...c.engine.gpuParts(), dfFma: o.dfFma, maxBindingBytes: c.engine.maxBindingBytes }
              : null,
        },
      );
      c.durations['decode.ops'] = performance.now() - t2;
      // (of which the why at the born op: its anatomy and cause search)
      c.durations['decode.why'] = ops.whyMs;
      check.ops = { layer: ops.layer, checks: ops.checks };
      // (the runs analysis's cause was the whole layer's: here the op's, or none where no single op is born)
      check.cause = ops.cause;
      check.anatomy = ops.anatomy;
      if (ops.born) {
        const where = b.step !== null && b.row !== null ? `decode step ${b.step} (position ${b.row}), ` : '';
        check.born = { ...b, check: ops.born.id, what: ops.born.what, ratio: ops.born.ratio };
        const because = ops.cause
          ? `; ${causeClause(ops.cause.words)}`
          : ops.born.nonFinite > 0
            ? `; it writes ${ops.born.nonFinite} NaN/Inf values`
            : '';
        check.sentence =
          `${where}layer ${b.layer}: the error is born at ${ops.born.what} (${ops.born.id}), ` +
          `${fmtRatio(ops.born.ratio)} its floor on this path's own recorded inputs ` +
          `(the layer's ops checked one by one, fused kernels' ops in groups; ` +
          `${checkedRowsWords(rows, runs[1].file.tokens.length, runs[1].file.generation)})${because}.`;
      }
    }
    out.push(check);
  }
  c.durations['decode.vsFull'] = performance.now() - t1;
  return out;
}

const fmtRatio = (x: number) =>
  Number.isFinite(x) ? (x < 100 ? `${x.toPrecision(2)}×` : `${x.toExponential(1)}×`) : `${x}×`;

/** Each path's whole forward (no cache) over its tokens, in one submit: the logits' rows from..T−1 of each. */
async function uncachedLogits(
  engine: Engine,
  tokens: number[][],
  paths: GenerateOptions[],
  from: number,
): Promise<Float32Array[]> {
  const batch = engine.batch();
  try {
    const runs = paths.map((p, i) => batch.forward(tokens[i], { ...p, taps: 'dump' }));
    await batch.submit();
    return await Promise.all(runs.map((r, i) => batch.read(r.taps.get('logits')!, tokens[i].length, from)));
  } finally {
    batch.release();
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
