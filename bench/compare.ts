// What a full comparison costs at checkpoint size, on seeded Pythia-shaped models: two bare forwards (the dump read
// back) against their GPU time, the first compare of a new prompt and a repeated one (every phase but bisection,
// 8 generated tokens on both paths), each phase's wall time, and the oracle alone against a reference forward.

import { analyze } from '../src/compare/analyze';
import type { Engine } from '../src/engine/engine';
import { GpuOracle } from '../src/engine/oracle-gpu';
import type { FaultId } from '../src/run/faults';
import { defaultRunSpec } from '../src/run/runspec';
import { median, rssAboveBase } from './cli';
import { SHAPES } from './forward';

export interface CompareRow {
  model: string;
  T: number;
  oracle: string;
  twoBareForwardsMs: number;
  /** GPU time of the two forwards (timestamp queries, summed over ops), ms. */
  twoForwardsGpuMs: number | null;
  /** Where the wall time of one bare forward goes (median of the reps): plan, record, gpu, read. */
  forwardWallMs: Record<string, number>;
  firstCompareMs: number;
  repeatedCompareMs: number;
  phasesFirst: Record<string, number>;
  phasesRepeated: Record<string, number>;
  oracleMs: number;
  referenceForwardMs: number;
  oracleVsReference: number;
  /** Peak RSS above the process's level before the model was made, through the first compare (bytes). */
  peakRssAboveBaseBytes: number;
}

/** Submit-to-done wall time of `record` run alone in a batch, median of `reps` after one warm-up. */
async function batchMs(engine: Engine, reps: number, record: (b: ReturnType<Engine['batch']>) => void) {
  const ms: number[] = [];
  for (let r = 0; r <= reps; r++) {
    const b = engine.batch();
    try {
      const t0 = performance.now();
      record(b);
      await b.submit();
      if (r > 0) ms.push(performance.now() - t0);
    } finally {
      b.release();
    }
  }
  return median(ms);
}

export async function benchCompare(
  engine: Engine,
  model: string,
  T: number,
  reps: number,
  log: (s: string) => void,
): Promise<CompareRow> {
  const shape = SHAPES[model];
  // CPU memory: the process's RSS before the model exists, and its peak (sampled every 5 ms) through the first
  // compare of a new prompt — what the model and a compare cost the CPU side.
  const rss = rssAboveBase(5);
  await engine.loadSeededModel({ ...shape, maxPos: 4096 }, 4321, model);
  const prompt = (salt: number) =>
    Array.from({ length: T }, (_, i) => (i * 7919 + salt * 104729) % shape.vocab);
  // BENCH_FAULT plants a teaching fault from layer 1 (the report's why phase then runs on its born op).
  const fault = process.env.BENCH_FAULT as FaultId | undefined;
  const spec = {
    ...defaultRunSpec(),
    model: { kind: 'embedded' as const, id: model },
    generate: 8,
    faults: fault ? [{ id: fault, fromLayer: 1 }] : [],
  };
  const skip = { bisection: true };
  // Warm-up on another prompt: pipelines (decode steps included), the self-test. The first compare below is then
  // the first of a new prompt, as a user who changes the prompt meets it.
  await analyze(engine, spec, prompt(0), { skip });

  const bare: number[] = [];
  const walls: Record<string, number[]> = {};
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    const a = await engine.forward(prompt(1), { path: 'reference' });
    await engine.forward(prompt(1), { path: 'fused' });
    bare.push(performance.now() - t0);
    for (const [k, v] of Object.entries(a.wall ?? {})) (walls[k] ??= []).push(v);
  }
  const ref = await engine.forward(prompt(1), { path: 'reference', timing: true });
  const fused = await engine.forward(prompt(1), { path: 'fused', timing: true });
  const gpuNs = (t: typeof ref.timings) => (t ? t.reduce((s, x) => s + x.ns, 0) : null);
  const rNs = gpuNs(ref.timings);
  const fNs = gpuNs(fused.timings);

  const t1 = performance.now();
  const first = await analyze(engine, spec, prompt(2), { skip });
  const firstMs = performance.now() - t1;
  const rssAbove = rss.stop();
  const again: number[] = [];
  let repeated = first;
  for (let r = 0; r < Math.max(1, Math.floor(reps / 3)); r++) {
    const t2 = performance.now();
    repeated = await analyze(engine, spec, prompt(2), { skip });
    again.push(performance.now() - t2);
  }

  const { device, pipelines, pool, model: gm } = engine.gpuParts();
  const oracle = new GpuOracle(device, pipelines, pool, gm, {
    dfFma: true,
    maxBindingBytes: engine.maxBindingBytes,
  });
  const oracleMs = await batchMs(engine, reps, (b) => {
    const run = oracle.forward(b.encoder, prompt(3), 'all');
    b.onRelease(() => run.release());
  });
  const referenceForwardMs = await batchMs(engine, reps, (b) => {
    b.forward(prompt(3), { path: 'reference', taps: 'all' });
  });
  const row: CompareRow = {
    model,
    T,
    oracle: `${first.oracle.kind}: ${first.oracle.reason}`,
    twoBareForwardsMs: median(bare),
    twoForwardsGpuMs: rNs !== null && fNs !== null ? (rNs + fNs) / 1e6 : null,
    forwardWallMs: Object.fromEntries(Object.entries(walls).map(([k, v]) => [k, median(v)])),
    firstCompareMs: firstMs,
    repeatedCompareMs: median(again),
    phasesFirst: first.durations,
    phasesRepeated: repeated.durations,
    oracleMs,
    referenceForwardMs,
    oracleVsReference: oracleMs / referenceForwardMs,
    peakRssAboveBaseBytes: rssAbove,
  };
  const f = (x: number) => x.toFixed(1);
  log(
    `${model} T=${T}: two bare forwards ${f(row.twoBareForwardsMs)} ms (GPU ${row.twoForwardsGpuMs?.toFixed(2) ?? '?'} ms; ` +
      `one forward: ${Object.entries(row.forwardWallMs)
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join(', ')}); first compare ${f(firstMs)} ms, repeated ${f(row.repeatedCompareMs)} ms; ` +
      `oracle ${f(oracleMs)} ms vs reference forward ${f(referenceForwardMs)} ms (×${row.oracleVsReference.toFixed(2)}); ` +
      `peak RSS +${(row.peakRssAboveBaseBytes / 2 ** 30).toFixed(2)} GiB; ` +
      `phases ${JSON.stringify(Object.fromEntries(Object.entries(first.durations).map(([k, v]) => [k, Math.round(v)])))}; oracle ${row.oracle}`,
  );
  engine.unloadModel();
  return row;
}
