// The two-path analysis of a Llama-family model (Llama, Qwen2, Qwen3, Mistral): the same Report as GPT-NeoX's
// (report.ts), so the page's charts and the CLI's line read it unchanged. Its phases:
// Every path's forward keeps its slots on the GPU (engine/llama-kept.ts): recorded and submitted without a wait,
// handed as they lie to the exact side, the local re-runs and the metrics, so that the GPU runs sources, the
// determinism run, the oracle, the local re-runs and the comparisons back to back and the CPU waits once, for the
// comparisons' summaries. Only what the report needs comes back: the summaries, the reference dump where there is a
// bisection (or a CPU oracle), and the born layer's taps of both paths where there is a why.
//   sources  — the reference forward with every step's tap and the fused forward (faults planted), on the GPU
//   oracle   — the exact forward with every tap and each exact layer on the reference path's input to it
//              (family-exact.ts): the GPU double-float forward (engine/llama-oracle-gpu.ts) where the adapter passed
//              the double-float self-test, else the CPU fp64 forward of the op registry (kernels/cpu/llama-forward.ts)
//              uploaded as df pairs, chosen as GPT-NeoX's is and checked on a tiny model of the family
//              (family-selftest.ts familyOracle)
//   local    — every fused layer on the reference path's input to it, in one submit, and the reference layer on the
//              same input (the local floor against the exact layer): the reference forward's own layer, bit for bit
//   comparisons — per layer: fused vs reference (propagated), reference vs exact (the noise floor), fused vs exact,
//              the local error against the local floor (born); every reference tap vs exact and vs fused; reduced on
//              the GPU in one submit (family-metrics.ts)
//   verdict  — the first divergent and the first born layer against k × the floor, as GPT-NeoX's
//   bisection — where it diverges, each fused kernel alone (GPT-NeoX's kernel ids: engine/family-llama.ts)
//   determinism — the fused forward run again (recorded right behind the sources), bit for bit on the GPU with the
//              comparisons
//   why      — at the first born layer, the op (or fused group) it is born at and its cause (family-why.ts)
//   generation — greedy on both paths, each with its KV cache (started before the comparisons' wait, so that its
//              steps are recorded while the GPU runs the oracle); a parting classified as GPT-NeoX's (near tie or not)
//   decode   — each path's decode checked op by op as a run of a generation (family-runs-decode.ts): asked for,
//              or where the texts part
// What the family cannot run (a kernel written in the
// page, GPT-NeoX's faults, faults from different layers) is refused in one line before any work.
// Past 400 lines: the phases of one analysis, read in order (their exact side and metrics are in files of their own).
import { type Engine, EngineError, type LlamaFaults } from '../engine/engine';
import { LLAMA_KERNEL_OF, type LlamaModel, notForLlama } from '../engine/family-llama';
import type { FusedKernelId } from '../engine/fused-kernels';
import { checkTokens } from '../engine/inputs';
import type { KeptRun } from '../engine/llama-kept';
import { BufferPool } from '../gpu/pool';
import type { HiddenDump } from '../numeric/types';
import { type FaultInfo, faultInfo, faultsFor, type PlantedFault, placeFaults } from '../run/faults';
import type { RunSpec } from '../run/runspec';
import { exactLastRow, exactOf } from './family-exact';
import { type FamilyMetrics, familyMetrics, type PathTensors } from './family-metrics';
import { checkFamilyDecode } from './family-runs-decode';
import { familyOracle } from './family-selftest';
import { familyWhy } from './family-why';
import { nonFiniteIn, ratioOf } from './floor';
import { generationVerdictOf, generationWords, overallVerdict } from './generation-verdict';
import { fullMetrics, metricValue } from './metrics';
import type { OracleInfo } from './oracle-info';
import type { OracleChoice, SelfTestOptions } from './oracle-source';
import { classifyParting } from './parting';
import {
  type AnalysisPartial,
  type BisectionRow,
  type GenerationResult,
  type LayerResult,
  REPORT_SCHEMA,
  type Report,
} from './report';

/** The CPU oracle of the family's runs analysis (family-runs.ts), in the report's words. */
export const LLAMA_ORACLE = {
  kind: 'cpu' as const,
  reason: 'the fp64 forward of the op registry ran on the CPU (kernels/cpu/llama-forward.ts)',
  selfTest: null,
};

export interface FamilyAnalyzeOptions {
  onProgress?: (phase: string, done: number, total: number) => void;
  onPartial?: (p: AnalysisPartial) => void;
  signal?: AbortSignal;
  /** The decode check asked for (analyze.ts AnalyzeOptions.checkDecode): each path's decode checked op by op. */
  checkDecode?: unknown;
  /** Which oracle: 'auto' (default) chooses per adapter as for GPT-NeoX (oracle-source.ts). */
  oracle?: OracleChoice;
  /** Test hooks of the double-float self-test (a broken library, to see the fallback). */
  selfTest?: SelfTestOptions;
}

class Cancelled extends Error {
  override name = 'AnalysisCancelled';
}

/**
 * The spec's faults placed for a Llama-family model as GPT-NeoX's are (a layer given, or drawn from the seed; from
 * there on), as the fused forward's constants and layers; or one line saying why not. Faults planted together act
 * from one layer (the fused forward takes one set of fault layers).
 */
export function placeLlamaFaults(
  spec: RunSpec,
  numLayers: number,
): { planted: PlantedFault[]; faults: LlamaFaults } {
  const offered = faultsFor('llama').map((f) => f.id);
  for (const f of spec.faults)
    if (!faultInfo(f.id).llama)
      throw notForLlama(`fault '${f.id}' (a GPT-NeoX kernel's; this family has ${offered.join(', ')})`);
  const planted = placeFaults(spec.faults, spec.seed, numLayers);
  return { planted, faults: llamaFaultsOf(planted, numLayers) };
}

/** The fused forward's fault options for planted Llama-family faults (from their first layer on). */
function llamaFaultsOf(planted: readonly PlantedFault[], numLayers: number): LlamaFaults {
  const faults: LlamaFaults = {};
  if (planted.length === 0) return faults;
  const from = planted[0].fromLayer;
  if (planted.some((p) => p.fromLayer !== from))
    throw notForLlama('faults starting at different layers (plant them from one layer)');
  for (const p of planted) {
    const info: FaultInfo = faultInfo(p.id);
    if (!info.llama || !info.constants) throw notForLlama(`fault '${p.id}'`);
    faults[info.llama.kernel] = { ...faults[info.llama.kernel], ...info.constants };
  }
  faults.layers = Array.from({ length: numLayers - from }, (_, i) => from + i);
  return faults;
}

/** Refuses what a Llama-family model cannot run yet, before any work. */
function checkSpec(spec: RunSpec): void {
  if (spec.custom) throw notForLlama('a kernel written in the page');
}

/** The Report of one RunSpec on the engine's loaded Llama-family model. */
export async function analyzeFamily(
  engine: Engine,
  spec: RunSpec,
  tokens: number[],
  opts: FamilyAnalyzeOptions = {},
): Promise<Report> {
  const info = engine.modelInfo;
  const model = engine.llamaModel;
  if (!info || !model) throw new Error('no Llama-family model is loaded');
  checkSpec(spec);
  const L = info.config.numLayers;
  const { planted, faults } = placeLlamaFaults(spec, L);
  const durations: Record<string, number> = {};
  const phases = 10;
  let done = 0;
  const step = async <R>(name: string, f: () => Promise<R> | R): Promise<R> => {
    if (opts.signal?.aborted) throw new Cancelled('analysis cancelled');
    opts.onProgress?.(name, done, phases);
    const t0 = performance.now();
    const r = await f();
    durations[name] = (durations[name] ?? 0) + performance.now() - t0;
    done++;
    return r;
  };
  checkTokens(info.config, tokens);
  const pool = new BufferPool(engine.devicePipelines().device);
  const kept: KeptRun[] = [];
  const keep = (k: KeptRun) => {
    kept.push(k);
    return k;
  };
  try {
    // One pass of the model's: the kept forwards' buffers count until they are released.
    return await model.holding(() =>
      analyzeWith(engine, spec, tokens, opts, { model, pool, planted, faults, step, durations, keep }),
    );
  } finally {
    for (const k of kept) k.release();
    pool.destroyAll();
  }
}

/** What the phases after the sources share. */
interface Phases {
  model: LlamaModel;
  pool: BufferPool;
  planted: PlantedFault[];
  faults: LlamaFaults;
  step: <R>(name: string, f: () => Promise<R> | R) => Promise<R>;
  durations: Record<string, number>;
  /** A kept forward released when the analysis ends (earlier where it is done with). */
  keep: (k: KeptRun) => KeptRun;
}

/** Both paths' forwards with every tap, kept on the GPU. */
interface Sources {
  ref: KeptRun;
  fused: KeptRun;
}

/** A kept forward as the metrics read it. */
function pathTensors(k: KeptRun): PathTensors {
  return {
    dump: {
      embeddings: k.need('embed'),
      layers: Array.from({ length: k.numLayers }, (_, i) => k.need(`layers.${i}.out`)),
      finalNorm: k.need('final_norm'),
      logits: k.need('logits'),
    },
    taps: k.slots,
  };
}

/** The tensors the determinism run compares bit for bit, named as the report names them. */
function determinismPairs(a: KeptRun, b: KeptRun) {
  const pair = (tensor: string, name: string) => ({ tensor, a: a.need(name), b: b.need(name) });
  return [
    pair('embeddings', 'embed'),
    ...Array.from({ length: a.numLayers }, (_, i) => pair(`layers.${i}`, `layers.${i}.out`)),
    pair('final_norm', 'final_norm'),
    pair('logits', 'logits'),
  ];
}

async function analyzeWith(
  engine: Engine,
  spec: RunSpec,
  tokens: number[],
  opts: FamilyAnalyzeOptions,
  p: Phases,
): Promise<Report> {
  const { model, step, keep } = p;
  const precision = spec.precision;
  const fusedOpts = { path: new Set(spec.fused), precision, llamaFaults: p.faults } as const;
  const runs: Sources = await step('sources', async () => ({
    ref: keep(await model.forwardKept(tokens, { path: 'reference', precision, taps: true })),
    fused: keep(await model.forwardKept(tokens, { ...fusedOpts, taps: true })),
  }));
  // The fused forward again, its dump kept (compared bit for bit with the comparisons).
  const again = await step('determinism', async () => keep(await model.forwardKept(tokens, fusedOpts)));
  const L = model.cfg.numLayers;
  const refIn = Array.from({ length: L }, (_, i) => runs.ref.layerInput(i).buf);
  // The exact forward and each exact layer on the reference path's input to it (one submit on the GPU oracle, reading
  // the reference path's buffers; the CPU oracle reads them back).
  const { oracleInfo, exact } = await step('oracle', async () => {
    const oracleInfo = await familyOracle(engine, opts.oracle ?? 'auto', p.pool, opts.selfTest ?? {});
    const inputs =
      oracleInfo.kind === 'cpu'
        ? await runs.ref.read(refIn.map((_, i) => (i === 0 ? 'embed' : `layers.${i - 1}.out`)))
        : null;
    const given = inputs ? [...inputs.values()] : refIn;
    return { oracleInfo, exact: exactOf(engine, model, p.pool, oracleInfo, tokens, given) };
  });
  try {
    // The local re-runs: every fused layer on the reference path's input to it (one submit), and the reference
    // layer on the same input (its exact layer is the oracle's, above: the local floor) — which is the reference
    // forward's own layer: the same kernels on the same input, no faults, each sum in a fixed order, so the same bits
    // (engine/llama-kept.test.ts asserts it in every precision mode); it is taken from there, not run again.
    const locals = await step('local', async () => ({
      fused: keep(await model.forwardKept(tokens, { ...fusedOpts, layerInputs: refIn })),
      ref: runs.ref,
    }));
    const { device, pipelines } = engine.devicePipelines();
    const layersOf = (k: KeptRun) => Array.from({ length: L }, (_, i) => k.need(`layers.${i}.out`));
    // Generation needs nothing of the comparisons: its steps are recorded while the GPU runs the work above, the ids
    // taken (and any error thrown) at the generation phase, in the report's order.
    const generating =
      spec.generate === 0 ? null : startGeneration(engine, spec, tokens, fusedOpts, opts.signal);
    const metrics = await step('comparisons', () =>
      familyMetrics({
        device,
        pipelines,
        cfg: model.cfg,
        T: tokens.length,
        spec,
        ref: pathTensors(runs.ref),
        fused: pathTensors(runs.fused),
        locals: { fused: layersOf(locals.fused), ref: layersOf(locals.ref) },
        exact,
        determinism: determinismPairs(runs.fused, again),
      }),
    );
    exact.release();
    for (const k of [again, locals.fused]) k.release();
    return await afterComparisons(engine, spec, tokens, opts, p, runs, oracleInfo, metrics, generating);
  } finally {
    exact.release();
  }
}

/** The verdict, bisection, determinism, the why and generation, after the comparisons. */
async function afterComparisons(
  engine: Engine,
  spec: RunSpec,
  tokens: number[],
  opts: FamilyAnalyzeOptions,
  p: Phases,
  runs: Sources,
  oracleInfo: OracleInfo & { dfFma: boolean },
  metrics: FamilyMetrics,
  generating: Promise<number[][]> | null,
): Promise<Report> {
  const { model, planted, step, durations } = p;
  const info = engine.modelInfo!;
  const fusedPath: ReadonlySet<FusedKernelId> = new Set(spec.fused);
  const fusedOpts = { path: fusedPath, precision: spec.precision, llamaFaults: p.faults } as const;
  const { precision, metric, k } = spec;
  const { layers, taps, logits, logitsScale } = metrics;
  const firstDivergentLayer = layers.find((l) => l.diverged)?.layer ?? null;
  const logitsDiverged =
    ratioOf(logits.propagated, logits.floor, metric, precision, logitsScale) > k ||
    nonFiniteIn(logits.propagated) > 0;
  const prompt = firstDivergentLayer !== null || logitsDiverged ? 'diverged' : 'agree';
  let report: Report = {
    schema: REPORT_SCHEMA,
    createdAt: new Date().toISOString(),
    spec,
    model: { name: info.name, config: info.config, family: 'llama', flavour: model.cfg.flavour },
    adapter: engine.adapter,
    tokens,
    plantedFaults: planted,
    metric,
    k,
    layers,
    firstDivergentLayer,
    firstBornLayer: layers.find((l) => l.born)?.layer ?? null,
    verdict: prompt,
    logits,
    taps,
    bisection: null,
    determinism: { identical: true, differences: [], runs: [] },
    generation: null,
    timing: { reference: null, fused: null, speedup: null },
    oracle: { kind: oracleInfo.kind, reason: oracleInfo.reason, selfTest: oracleInfo.selfTest },
    metricsOn: 'gpu',
    durations,
    why: null,
    runs: [
      { id: 'reference', source: 'engine', precision, kernels: [] },
      { id: 'fused', source: 'engine', precision, kernels: [...spec.fused] },
    ],
  };
  opts.onPartial?.({ kind: 'analysis', report });
  const bisection = await step('bisection', async () =>
    prompt === 'agree'
      ? null
      : bisect(engine, spec, tokens, planted, await runs.ref.readDump(), layers, metrics.layerScales),
  );
  if (bisection) opts.onPartial?.({ kind: 'bisection', bisection });
  report = { ...report, bisection };
  const determinism = metrics.determinism;
  if (!determinism) throw new Error('family compare: the comparisons gave no determinism result');
  opts.onPartial?.({ kind: 'determinism', determinism });
  report = { ...report, determinism };
  const bornAt = report.firstBornLayer;
  const why = await step('why', async () => {
    if (bornAt === null) return null;
    // The born layer's taps of both paths and its input, read back now (the why's fp64 work is on the CPU).
    const bornTaps = async (k: KeptRun) =>
      k.read(
        [...k.slots.keys()].filter(
          (n) =>
            n.startsWith(`layers.${bornAt}.`) || n === (bornAt === 0 ? 'embed' : `layers.${bornAt - 1}.out`),
        ),
      );
    const [fusedTaps, refTaps] = [await bornTaps(runs.fused), await bornTaps(runs.ref)];
    return familyWhy({
      cfg: model.cfg,
      shared: info.config,
      weights: model.weights,
      tokens,
      layer: bornAt,
      fusedTaps,
      refTaps,
      metric,
      k,
      precision,
      determinism,
    });
  });
  runs.ref.release();
  runs.fused.release();
  if (why) opts.onPartial?.({ kind: 'why', why });
  report = { ...report, why };
  const generation = await step('generation', () =>
    generating === null
      ? null
      : generate(engine, spec, tokens, fusedOpts, opts, generating, (seq) =>
          exactLastRow(engine, model, p.pool, oracleInfo, seq),
        ),
  );
  return { ...report, verdict: overallVerdict(prompt, generation), generation, durations };
}

/**
 * Which fused kernel reproduces the divergence: the fused path with each switched-on kernel alone (its own faults
 * only), each layer against the reference and the floor, as GPT-NeoX's bisection does (analysis-after.ts). GPT-NeoX's
 * parallel-residual epilogue has no Llama counterpart: it is left out.
 */
async function bisect(
  engine: Engine,
  spec: RunSpec,
  tokens: number[],
  planted: readonly PlantedFault[],
  ref: HiddenDump,
  layers: readonly LayerResult[],
  layerScales: readonly number[],
): Promise<BisectionRow[]> {
  const { precision, metric, k } = spec;
  const rows: BisectionRow[] = [];
  const L = layers.length;
  for (const kernel of spec.fused) {
    if (LLAMA_KERNEL_OF[kernel] === null) continue;
    const own = planted.filter((p) => faultInfo(p.id).kernel === kernel);
    const llamaFaults = llamaFaultsOf(own, L);
    const { dump } = await engine.forward(tokens, { path: new Set([kernel]), precision, llamaFaults });
    let firstLayer: number | null = null;
    let worst = { value: 0, ratio: 0 };
    dump.layers.forEach((got, i) => {
      const m = fullMetrics(got, ref.layers[i], precision);
      const ratio = ratioOf(m, layers[i].floor, metric, precision, layerScales[i]);
      const hit = ratio > k || nonFiniteIn(m) > 0;
      if (hit && firstLayer === null) {
        firstLayer = i;
        worst = { value: metricValue(m, metric), ratio };
      } else if (firstLayer === null && ratio > worst.ratio) worst = { value: metricValue(m, metric), ratio };
    });
    rows.push({ kernel, reproduces: firstLayer !== null, firstLayer, ...worst });
  }
  return rows;
}

/** Greedy decoding on both paths, started (each path's ids, in the order reference, fused); awaited by generate. */
function startGeneration(
  engine: Engine,
  spec: RunSpec,
  tokens: number[],
  fusedOpts: { path: ReadonlySet<FusedKernelId>; precision: RunSpec['precision']; llamaFaults: LlamaFaults },
  signal: AbortSignal | undefined,
): Promise<number[][]> {
  const paths = [{ path: 'reference' as const, precision: spec.precision }, fusedOpts];
  const started = engine.generatePaths(tokens, spec.generate, paths, undefined, signal);
  started.catch(() => {}); // its error is thrown where generate awaits it
  return started;
}

/**
 * Greedy decoding on both paths (each with its KV cache, started by startGeneration), the tokens handed out once both
 * paths are done. Where
 * the texts part, the parting is classified as GPT-NeoX's is (parting.ts classifyParting): at the row that chose
 * the first differing id, both paths' whole forwards and the exact forward (the compare's oracle) over the shared
 * tokens — a near tie flipped by rounding is benign, otherwise the text diverges.
 */
async function generate(
  engine: Engine,
  spec: RunSpec,
  tokens: number[],
  fusedOpts: { path: ReadonlySet<FusedKernelId>; precision: RunSpec['precision']; llamaFaults: LlamaFaults },
  opts: FamilyAnalyzeOptions,
  started: Promise<number[][]>,
  exactRow: (seq: number[]) => Promise<Float64Array>,
): Promise<GenerationResult> {
  const n = spec.generate;
  const tok = engine.tokenizer;
  const text = (ids: number[]) => (tok ? tok.decode(ids) : null);
  const sofar: number[][] = [[], []];
  const [ref, fused] = await started;
  // Each step's ids of both paths handed out in order, as the paths' generation hands them out once both are done.
  for (let s = 0; s < n; s++)
    (['reference', 'fused'] as const).forEach((path, p) => {
      sofar[p].push([ref, fused][p][s]);
      opts.onPartial?.({ kind: 'token', path, ids: [...sofar[p]], text: text(sofar[p]), total: n });
    });
  const first = ref.findIndex((id, i) => id !== fused[i]);
  const g: GenerationResult = {
    reference: { ids: ref, text: text(ref) },
    fused: { ids: fused, text: text(fused) },
    firstDifference: first < 0 ? null : first,
    parting: null,
  };
  if (first >= 0) {
    const seq = [...tokens, ...ref.slice(0, first)];
    const refRow = (
      await engine.forward(seq, { path: 'reference', precision: spec.precision, logits: 'last' })
    ).dump.logits;
    const fusedRow = (await engine.forward(seq, { ...fusedOpts, logits: 'last' })).dump.logits;
    const exactLast = await exactRow(seq);
    g.parting = classifyParting({
      step: first,
      promptLength: tokens.length,
      refChose: ref[first],
      fusedChose: fused[first],
      refRow,
      fusedRow,
      exactRow: exactLast,
      precision: spec.precision,
      k: spec.k,
      tokenText: tok ? (id) => tok.decode([id]) : undefined,
    });
  }
  // Each path's decode checked op by op (family-runs-decode.ts): asked for, or by itself where the texts part.
  const asked = spec.checkDecode === true || opts.checkDecode !== undefined;
  if (asked || first >= 0) {
    const paths = [
      { name: 'reference', opts: { path: 'reference' as const, precision: spec.precision } },
      { name: 'fused', opts: fusedOpts },
    ];
    const d = await checkFamilyDecode(engine, tokens, n, paths, {
      k: spec.k,
      metric: spec.metric,
      signal: opts.signal,
    });
    g.decode = d.checks;
    g.decodeStarted = asked ? 'asked' : 'auto';
  }
  const verdict = generationVerdictOf(g);
  return { ...g, verdict, words: generationWords({ ...g, verdict }, tokens.length) };
}

/** A GPT-NeoX model refuses the Llama family's faults in one line (their constants are not its kernels'). */
export function checkNeoXFaults(spec: RunSpec): void {
  const llama = spec.faults.filter((f) => faultInfo(f.id).llama);
  if (llama.length > 0)
    throw new EngineError(
      `fault '${llama[0].id}' lives in a Llama-family kernel; this GPT-NeoX model offers ${faultsFor(
        'gpt_neox',
      )
        .map((f) => f.id)
        .join(', ')}`,
      'input',
    );
}
