// `npx tsx bench/compare-speed.ts`: where the time of a full compare goes (issue 21), per seeded Pythia-shaped
// model (made on the GPU): the compare itself (first and repeated wall, the analysis's phases), then the parts of
// its one GPU batch, each submitted alone (wall from submit to done, and per-op GPU time summed by op kind from
// timestamp queries): the reference and fused forwards with every tap, the double-float oracle forward, the
// oracle's local layers, the local re-runs of every layer on both paths, and the reductions alone. With --kernels,
// the reference linear layer's three kernels at the model's shapes (T rows and one row) and the oracle's df linear
// under each register tile (T rows): GPU time of each, and whether its bits equal the default kernel's here
// (bench/compare-kernels.ts). Flags: --models pythia-70m,… --T 128 --reps 3 --out FILE
// (--gpu-oracle: the parts with the GPU oracle even on a CPU adapter, for a smoke run on SwiftShader).

import {
  type AnalysisContext,
  comparisons,
  local,
  oracle as oraclePhase,
  sources,
} from '../src/compare/analysis-phases';
import { analyze, metricsEngine } from '../src/compare/analyze';
import { decideOracle } from '../src/compare/oracle-source';
import type { GpuBatch } from '../src/engine/batch';
import type { Engine } from '../src/engine/engine';
import { GpuOracle } from '../src/engine/oracle-gpu';
import { summarizeTimings } from '../src/engine/timing';
import { Program } from '../src/gpu/program';
import { GpuTimer, type PassTiming } from '../src/gpu/timestamps';
import { dfHi } from '../src/kernels/df-hi';
import { faultHooks } from '../src/run/faults';
import { defaultRunSpec } from '../src/run/runspec';
import { argv, benchEngine, log, median, printOut, runMain, saveOut, value } from './cli';
import { kernelTimes } from './compare-kernels';
import { SHAPES } from './forward';

const r2 = (x: number) => Math.round(x * 100) / 100;

const T0 = Number(value('--T') ?? 128);
const REPS = Number(value('--reps') ?? 3);

/** ms by op kind (summed over layers), largest first. */
function byKind(t: PassTiming[] | null, layers: number): Record<string, number> | null {
  if (!t) return null;
  const k = summarizeTimings(t, layers).perKind;
  return Object.fromEntries(
    Object.entries(k)
      .sort((a, b) => b[1] - a[1])
      .map(([n, ns]) => [n, r2(ns / 1e6)]),
  );
}

/** One part of the batch alone: record it, submit, wall from submit to done; its timers' per-op times. */
async function part(
  engine: Engine,
  record: (b: GpuBatch) => { timers: GpuTimer[]; runs?: { timings: PassTiming[] | null }[] },
): Promise<{ recordMs: number; wallMs: number; timings: PassTiming[] | null }> {
  const b = engine.batch();
  try {
    const t0 = performance.now();
    const { timers, runs } = record(b);
    for (const t of timers) t.resolve(b.encoder);
    const t1 = performance.now();
    await b.submit();
    const wallMs = performance.now() - t1;
    const timings: PassTiming[] = [];
    for (const t of timers) timings.push(...((await t.read()) ?? []));
    for (const r of runs ?? []) timings.push(...(r.timings ?? []));
    for (const t of timers) t.destroy();
    return { recordMs: t1 - t0, wallMs, timings: timings.length ? timings : null };
  } finally {
    b.release();
  }
}

async function breakdown(engine: Engine, tokens: number[]) {
  const spec = defaultRunSpec();
  const fused = new Set(spec.fused);
  const L = engine.modelInfo!.config.numLayers;
  const { device, pipelines, pool, model } = engine.gpuParts();
  const info = await decideOracle(engine, argv.includes('--gpu-oracle') ? 'gpu' : 'auto');
  if (info.kind !== 'gpu') throw new Error(`the GPU oracle did not run here: ${info.reason}`);
  const oracle = new GpuOracle(device, pipelines, pool, model, {
    dfFma: info.dfFma,
    maxBindingBytes: engine.maxBindingBytes,
  });
  const parts: Record<string, () => Promise<Awaited<ReturnType<typeof part>>>> = {
    reference: () =>
      part(engine, (b) => ({
        timers: [],
        runs: [b.forward(tokens, { path: 'reference', precision: 'fp32', taps: 'all', timing: true })],
      })),
    referenceUntimed: () =>
      part(engine, (b) => {
        b.forward(tokens, { path: 'reference', precision: 'fp32', taps: 'all' });
        return { timers: [] };
      }),
    fused: () =>
      part(engine, (b) => ({
        timers: [],
        runs: [b.forward(tokens, { path: fused, precision: 'fp32', taps: 'all', timing: true })],
      })),
    oracle: () =>
      part(engine, (b) => {
        const timer = new GpuTimer(device, 2048);
        const run = oracle.forward(b.encoder, tokens, 'all', timer);
        b.onRelease(() => run.release());
        return { timers: [timer] };
      }),
    oracleLocal: () =>
      part(engine, (b) => {
        const T = tokens.length;
        const d = model.cfg.hiddenSize;
        const run = oracle.forward(b.encoder, tokens, 'dump');
        b.onRelease(() => run.release());
        // (the whole forward again only as the layers' inputs; its time is the part above)
        const program = new Program(device, pipelines);
        b.onRelease(() => program.dispose());
        const inputs = Array.from({ length: L }, (_, i) => {
          const src = run.taps.get(i === 0 ? 'embed' : `layers.${i - 1}.out`)!;
          const input = b.buffer(T * d * 4, `in${i}`);
          program.add(dfHi(`in.${i}`, { x: src.buffer, y: input }, T * d));
          return input;
        });
        program.encode(b.encoder);
        const timer = new GpuTimer(device, 2048);
        for (let i = 0; i < L; i++) {
          const one = oracle.layer(b.encoder, i, { f32: inputs[i] }, T, 'dump', timer);
          b.onRelease(() => one.release());
        }
        return { timers: [timer] };
      }),
    local: () =>
      part(engine, (b) => {
        const ref = b.forward(tokens, { path: 'reference', precision: 'fp32', taps: 'dump' });
        const runs = [];
        for (let i = 0; i < L; i++) {
          const input = ref.taps.get(i === 0 ? 'embed' : `layers.${i - 1}.out`)!.buffer;
          const layers = { from: i, to: i + 1, input };
          runs.push(
            b.forward(tokens, { path: fused, precision: 'fp32', taps: 'dump', layers, timing: true }),
          );
          runs.push(
            b.forward(tokens, { path: 'reference', precision: 'fp32', taps: 'dump', layers, timing: true }),
          );
        }
        return { timers: [], runs };
      }),
  };
  const out: Record<string, unknown> = {};
  // The comparisons alone: the batch's other parts recorded and finished first, then the reductions recorded
  // (CPU), submitted and read (GPU and readback).
  const reductions = async () => {
    const batches: GpuBatch[] = [];
    const c: AnalysisContext = {
      engine,
      spec,
      tokens,
      fusedSet: fused,
      planted: [],
      hooks: faultHooks([]),
      ...(({ on, m }) => ({ metricsOn: on, metrics: m }))(metricsEngine(engine, 'auto')),
      taps: 'all',
      skipLocal: false,
      durations: {},
      newBatch: () => {
        const b = engine.batch();
        batches.push(b);
        return b;
      },
    };
    try {
      const runs = sources(c);
      const o = await oraclePhase(c, runs, 'auto');
      const locals = local(c, runs, o.tensors);
      await device.queue.onSubmittedWorkDone();
      const t0 = performance.now();
      let t1 = 0;
      await comparisons(c, runs, o.tensors, locals, () => {
        t1 = performance.now();
      });
      const t2 = performance.now();
      return { recordMs: t1 - t0, waitAndReadMs: t2 - t1 };
    } finally {
      for (const b of batches) b.release();
    }
  };
  await reductions();
  const red = [];
  for (let r = 0; r < REPS; r++) red.push(await reductions());
  out.comparisonsAlone = {
    recordMs: r2(median(red.map((x) => x.recordMs))),
    waitAndReadMs: r2(median(red.map((x) => x.waitAndReadMs))),
  };
  log(`  comparisonsAlone: ${JSON.stringify(out.comparisonsAlone)}`);
  for (const [name, f] of Object.entries(parts)) {
    await f(); // warm: pipelines, recorded plans
    const got: Awaited<ReturnType<typeof part>>[] = [];
    for (let r = 0; r < REPS; r++) got.push(await f());
    const last = got[got.length - 1];
    const gpuMs = last.timings ? last.timings.reduce((s, t) => s + t.ns, 0) / 1e6 : null;
    out[name] = {
      recordMs: r2(median(got.map((g) => g.recordMs))),
      wallMs: r2(median(got.map((g) => g.wallMs))),
      gpuMs: gpuMs === null ? null : r2(gpuMs),
      gpuMsByKind: byKind(last.timings, L),
    };
    log(`  ${name}: ${JSON.stringify(out[name])}`);
  }
  return out;
}

async function perModel(engine: Engine, name: string, kernels: boolean) {
  const shape = SHAPES[name];
  const t0 = performance.now();
  await engine.loadSeededModel({ ...shape, maxPos: 4096 }, 4321, name);
  log(`${name}: seeded on the GPU in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const prompt = (salt: number) =>
    Array.from({ length: T0 }, (_, i) => (i * 7919 + salt * 104729) % shape.vocab);
  const row: Record<string, unknown> = { model: name, T: T0 };
  const spec = { ...defaultRunSpec(), model: { kind: 'embedded' as const, id: name }, generate: 8 };
  const skip = { bisection: true };
  await analyze(engine, spec, prompt(7), { skip });
  const t1 = performance.now();
  const first = await analyze(engine, spec, prompt(8), { skip });
  const firstMs = performance.now() - t1;
  const again: number[] = [];
  let last = first;
  for (let r = 0; r < REPS; r++) {
    const t2 = performance.now();
    last = await analyze(engine, spec, prompt(8), { skip });
    again.push(performance.now() - t2);
  }
  const rd = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, r2(v)]));
  row.compare = {
    firstMs: r2(firstMs),
    repeatedMs: r2(median(again)),
    allRepeatedMs: again.map(r2),
    phasesFirst: rd(first.durations),
    phasesRepeated: rd(last.durations),
    verdict: last.verdict,
    generation: last.generation
      ? { ref: last.generation.reference.ids, fused: last.generation.fused.ids }
      : null,
  };
  log(`${name} compare: ${JSON.stringify(row.compare)}`);
  row.batchParts = await breakdown(engine, prompt(8));
  if (kernels) Object.assign(row, await kernelTimes(engine, T0, log));
  engine.unloadModel();
  return row;
}

async function main() {
  const engine = await benchEngine();
  const kernels = argv.includes('--kernels');
  const out: Record<string, unknown> = { date: new Date().toISOString(), adapter: engine.adapter, rows: [] };
  for (const m of (value('--models') ?? 'pythia-70m').split(',')) {
    if (!SHAPES[m]) throw new Error(`unknown model shape ${m}`);
    (out.rows as unknown[]).push(await perModel(engine, m, kernels));
    saveOut(out);
  }
  printOut(out);
  engine.dispose();
}

runMain(main);
