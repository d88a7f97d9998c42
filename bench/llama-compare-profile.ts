// The Llama compare's parts one at a time on the loaded model (bench/llama-compare.ts --profile): where a full
// compare's wall goes. Each kind of forward the compare records (reference and fused with every tap, the fused
// dump of the determinism run, the local re-runs of both paths): CPU ms to record and submit, and wall ms to done
// (the GPU drained before each); the GPU oracle's whole forward with every tap with each dispatch in a timed pass,
// summed per op (the `layers.{i}.` prefix dropped) and per kernel; its layers on given inputs (wall); generation of
// both paths in lockstep (wall, and CPU ms inside each path's step forwards, counted by wrapping them).

import { familyOracleOf } from '../src/compare/family-exact';
import type { Engine } from '../src/engine/engine';
import { ALL_FUSED } from '../src/engine/fused-kernels';
import type { BufferPool } from '../src/gpu/pool';
import { GpuTimer } from '../src/gpu/timestamps';
import { log, median } from './cli';

const round = (x: number) => Math.round(x * 100) / 100;

export async function profileCompare(
  engine: Engine,
  pool: BufferPool,
  tokens: number[],
  dfFma: boolean | null,
  reps: number,
  generate: number,
): Promise<Record<string, unknown>> {
  const model = engine.llamaModel;
  if (!model) throw new Error('profile: no Llama-family model is loaded');
  const { device } = engine.devicePipelines();
  const fused = { path: new Set(ALL_FUSED), precision: 'fp32' as const };
  const ref = { path: 'reference' as const, precision: 'fp32' as const };
  const forwards: Record<string, { recordMs: number[]; wallMs: number[] }> = {};
  const time = async (label: string, f: () => Promise<{ release(): void }>) => {
    await device.queue.onSubmittedWorkDone();
    const t0 = performance.now();
    const k = await f();
    const t1 = performance.now();
    await device.queue.onSubmittedWorkDone();
    const t2 = performance.now();
    k.release();
    forwards[label] ??= { recordMs: [], wallMs: [] };
    forwards[label].recordMs.push(round(t1 - t0));
    forwards[label].wallMs.push(round(t2 - t0));
  };
  for (let r = 0; r < reps; r++) {
    await time('reference, every tap', () => model.forwardKept(tokens, { ...ref, taps: true }));
    await time('fused, every tap', () => model.forwardKept(tokens, { ...fused, taps: true }));
    await time('fused, dump', () => model.forwardKept(tokens, fused));
    const base = await model.forwardKept(tokens, { ...ref, taps: true });
    const refIn = Array.from({ length: model.cfg.numLayers }, (_, i) => base.layerInput(i).buf);
    await time('fused, local', () => model.forwardKept(tokens, { ...fused, layerInputs: refIn }));
    await time('reference, local', () => model.forwardKept(tokens, { ...ref, layerInputs: refIn }));
    if (dfFma !== null) {
      const oracle = familyOracleOf(engine, model, pool, dfFma);
      await time('oracle layers on given inputs', async () => {
        const enc = device.createCommandEncoder();
        const run = oracle.layersOn(enc, tokens, refIn);
        device.queue.submit([enc.finish()]);
        return run;
      });
      await time('oracle forward, every tap', async () => {
        const enc = device.createCommandEncoder();
        const run = oracle.forward(enc, tokens, 'all');
        device.queue.submit([enc.finish()]);
        return run;
      });
    }
    await device.queue.onSubmittedWorkDone();
    base.release();
  }
  // The oracle forward with each dispatch timed.
  let oracleOps: Record<string, number> | null = null;
  let oracleKernels: Record<string, number> | null = null;
  if (dfFma !== null) {
    const oracle = familyOracleOf(engine, model, pool, dfFma);
    const timer = new GpuTimer(device, 2048);
    const enc = device.createCommandEncoder();
    const run = oracle.forward(enc, tokens, 'all', timer);
    timer.resolve(enc);
    device.queue.submit([enc.finish()]);
    const passes = (await timer.read()) ?? [];
    timer.destroy();
    run.release();
    oracleOps = {};
    oracleKernels = {};
    for (const p of passes) {
      const op = p.label.replace(/^layers\.\d+\./, '');
      oracleOps[op] = round((oracleOps[op] ?? 0) + p.ns / 1e6);
    }
    oracleKernels.total = round(passes.reduce((s, p) => s + p.ns, 0) / 1e6);
    oracleKernels.dispatches = passes.length;
  }
  // Generation, both paths in lockstep, with the CPU ms inside each path's step forwards.
  const fusedFwd = (model as unknown as { fused(): object }).fused();
  const protos = [Object.getPrototypeOf(model.ref), Object.getPrototypeOf(fusedFwd)];
  const stepMs: number[] = [];
  const originals = protos.map((p) => p.forwardKeptAt);
  protos.forEach((p, i) => {
    p.forwardKeptAt = async function (this: unknown, ...args: unknown[]) {
      const t0 = performance.now();
      const r = await originals[i].apply(this, args);
      stepMs.push(performance.now() - t0);
      return r;
    };
  });
  const gen: { n: number; wallMs: number; stepsCpuMs: number; steps: number; cached?: unknown }[] = [];
  try {
    for (let r = 0; r < reps; r++)
      for (const n of [1, generate]) {
        await device.queue.onSubmittedWorkDone();
        stepMs.length = 0;
        const t0 = performance.now();
        await engine.generatePaths(tokens, n, [ref, fused]);
        gen.push({
          n,
          wallMs: round(performance.now() - t0),
          stepsCpuMs: round(stepMs.reduce((s, x) => s + x, 0)),
          steps: stepMs.length,
          // the decode steps built anew and replayed per path (llama-step-cache.ts; absent in a tree without it)
          cached: (model as unknown as { lastStepCounts?: unknown }).lastStepCounts,
        });
      }
  } finally {
    protos.forEach((p, i) => {
      p.forwardKeptAt = originals[i];
    });
  }
  const med = Object.fromEntries(
    Object.entries(forwards).map(([k, v]) => [k, { recordMs: median(v.recordMs), wallMs: median(v.wallMs) }]),
  );
  log(`profile: forwards ${JSON.stringify(med)}`);
  log(
    `profile: oracle ops (GPU ms, timed passes) ${JSON.stringify(oracleOps)} ${JSON.stringify(oracleKernels)}`,
  );
  log(`profile: generation ${JSON.stringify(gen)}`);
  return { forwards, medians: med, oracleOps, oracleKernels, generation: gen };
}
