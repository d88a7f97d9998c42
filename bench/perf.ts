// `npx tsx bench/perf.ts`: the time around the GPU, per seeded Pythia-shaped model (each built once): two bare
// forwards (the whole dump read back, and the last logits row alone) against their GPU time; greedy generation
// of 8 tokens per path after a 128-token prompt (both paths interleaved in one call, all steps in one submit or
// streamed one step per submit, and one path at a time); the fused and reference forward, submit to done; and
// a full compare at T = 128 (bisection skipped, 8 tokens). Flags: --models pythia-70m,… --compare pythia-410m,…
// --out FILE, --T 128 and --long 512 (the prompt and the second forward length; small for a smoke run on
// SwiftShader), --reps 7. The PyTorch peer for the same shapes is bench/torch_peer.py (--generate).

import { analyze } from '../src/compare/analyze';
import type { Engine } from '../src/engine/engine';
import { defaultRunSpec } from '../src/run/runspec';
import { benchEngine, log, median, printOut, runMain, saveOut, value } from './cli';
import { SHAPES } from './forward';

/** Median wall ms of `f` over `reps` calls after `warm` warm-ups. */
async function timeIt(f: () => Promise<unknown>, reps: number, warm = 2): Promise<number> {
  for (let i = 0; i < warm; i++) await f();
  const ms: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await f();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

const T0 = Number(value('--T') ?? 128);
const LONG = Number(value('--long') ?? 512);

async function perModel(engine: Engine, model: string, compare: boolean, reps: number) {
  const shape = SHAPES[model];
  const t0 = performance.now();
  // Seeded weights made on the GPU (the same seed gives the same weights on any adapter): 1.4b in well under a
  // second, where the CPU's random model takes minutes.
  await engine.loadSeededModel({ ...shape, maxPos: 4096 }, 4321, model);
  log(`${model}: loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const prompt = (T: number, salt: number) =>
    Array.from({ length: T }, (_, i) => (i * 7919 + salt * 104729) % shape.vocab);
  const p = prompt(T0, 1);
  const row: Record<string, unknown> = { model };

  // Two bare forwards, and their GPU time (timestamp queries summed over ops).
  const two = (logits: 'all' | 'last') => async () => {
    await engine.forward(p, { path: 'reference', logits });
    await engine.forward(p, { path: 'fused', logits });
  };
  row.twoBareForwardsDumpMs = await timeIt(two('all'), reps);
  row.twoBareForwardsLastRowMs = await timeIt(two('last'), reps);
  // Where one bare forward's wall time goes (plan, record, gpu = submit to mapped, read), last row only.
  const walls: Record<string, number[]> = {};
  for (let r = 0; r < reps; r++) {
    for (const path of ['reference', 'fused'] as const) {
      const w = (await engine.forward(p, { path, logits: 'last' })).wall ?? {};
      for (const [k, v] of Object.entries(w)) (walls[`${path}.${k}`] ??= []).push(v);
    }
  }
  row.forwardWallMs = Object.fromEntries(Object.entries(walls).map(([k, v]) => [k, median(v)]));
  log(`${model} one forward's wall (ms): ${JSON.stringify(row.forwardWallMs)}`);
  const gpu = async (path: 'reference' | 'fused') => {
    const r = await engine.forward(p, { path, timing: true, logits: 'last' });
    return r.timings ? r.timings.reduce((s, x) => s + x.ns, 0) / 1e6 : null;
  };
  const g = [await gpu('reference'), await gpu('fused')];
  row.twoForwardsGpuMs = g[0] !== null && g[1] !== null ? g[0] + g[1] : null;
  log(
    `${model} T=${T0}: two bare forwards ${(row.twoBareForwardsDumpMs as number).toFixed(2)} ms (dump), ${(row.twoBareForwardsLastRowMs as number).toFixed(2)} ms (last row); GPU ${g.map((x) => x?.toFixed(2)).join(' + ')} ms`,
  );

  // Forward submit-to-done (recorded plan, no readback) at T = 128 and 512.
  const fwd: Record<string, number> = {};
  for (const T of [T0, LONG]) {
    for (const path of ['reference', 'fused'] as const) {
      const toks = prompt(T, 2);
      await engine.timeForward(toks, { path }, 5);
      const { ms, dispatches } = await engine.timeForward(toks, { path }, reps * 2);
      fwd[`${path}_T${T}`] = median(ms);
      fwd[`${path}_T${T}_dispatches`] = dispatches;
    }
  }
  row.forwardMs = fwd;
  log(`${model} forward: ${JSON.stringify(fwd)}`);

  // Greedy generation, 8 tokens per path after 128 tokens.
  const paths = [{ path: 'reference' as const }, { path: 'fused' as const }];
  const gen: Record<string, number> = {};
  gen.bothPathsOneSubmit = await timeIt(
    () => engine.generatePaths(p, 8, paths, undefined, undefined, { chunk: 8 }),
    reps,
  );
  gen.bothPathsChunk2 = await timeIt(
    () => engine.generatePaths(p, 8, paths, undefined, undefined, { chunk: 2 }),
    reps,
  );
  gen.bothPathsStreamed = await timeIt(
    () => engine.generatePaths(p, 8, paths, () => {}, undefined, { chunk: 1 }),
    reps,
  );
  gen.referenceAlone = await timeIt(
    () => engine.generate(p, 8, undefined, undefined, { path: 'reference' }),
    reps,
  );
  gen.fusedAlone = await timeIt(() => engine.generate(p, 8, undefined, undefined, { path: 'fused' }), reps);
  gen.fusedAloneOneSubmit = await timeIt(
    () => engine.generatePaths(p, 8, [{ path: 'fused' }], undefined, undefined, { chunk: 8 }),
    reps,
  );
  // A new prompt of the same length (recorded sessions replayed with new ids) and the first call of a new length.
  gen.bothPathsNewPrompt = await timeIt(
    async () =>
      engine.generatePaths(prompt(T0, 3 + Math.floor(Math.random() * 1000)), 8, paths, undefined, undefined, {
        chunk: 8,
      }),
    reps,
    0,
  );
  const tc = performance.now();
  await engine.generatePaths(prompt(T0 - 1, 5), 8, paths, undefined, undefined, { chunk: 8 });
  gen.bothPathsFirstOfLength = performance.now() - tc;
  row.generateMs = gen;
  log(
    `${model} generate 8: ${JSON.stringify(Object.fromEntries(Object.entries(gen).map(([k, v]) => [k, +v.toFixed(2)])))}`,
  );

  if (compare) {
    const spec = { ...defaultRunSpec(), model: { kind: 'embedded' as const, id: model }, generate: 8 };
    const skip = { bisection: true };
    await analyze(engine, spec, prompt(T0, 7), { skip });
    const t1 = performance.now();
    const first = await analyze(engine, spec, prompt(T0, 8), { skip });
    const firstMs = performance.now() - t1;
    const again: number[] = [];
    let last = first;
    for (let r = 0; r < 3; r++) {
      const t2 = performance.now();
      last = await analyze(engine, spec, prompt(T0, 8), { skip });
      again.push(performance.now() - t2);
    }
    row.compare = {
      T: T0,
      firstMs,
      repeatedMs: median(again),
      phasesFirst: first.durations,
      phasesRepeated: last.durations,
    };
    log(
      `${model} compare T=${T0}: first ${firstMs.toFixed(1)} ms, repeated ${median(again).toFixed(1)} ms; phases ${JSON.stringify(last.durations)}`,
    );
  }
  row.planCache = engine.planCacheStats();
  engine.unloadModel();
  return row;
}

async function main() {
  const engine = await benchEngine();
  const models = (value('--models') ?? 'pythia-70m').split(',');
  const compare = new Set((value('--compare') ?? '').split(','));
  const reps = Number(value('--reps') ?? 7);
  const out: Record<string, unknown> = { date: new Date().toISOString(), adapter: engine.adapter, rows: [] };
  for (const m of models) {
    if (!SHAPES[m]) throw new Error(`unknown model shape ${m}`);
    (out.rows as unknown[]).push(await perModel(engine, m, compare.has(m), reps));
    saveOut(out);
  }
  printOut(out);
  engine.dispose();
}

runMain(main);
